"""Dropout (caffe2.python.helpers.dropout; brew registers them)."""



def dropout(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    """Dropout writing `blob_out` and the mask `_<blob_out>_mask`; is_test
    is required, as in Caffe2, so train and test nets are explicit."""
    kwargs['engine'] = 'CUDNN' if use_cudnn else 'DEFAULT'
    if 'is_test' not in kwargs:
        raise ValueError("brew.dropout: argument 'is_test' is required")
    return model.net.Dropout(blob_in, [blob_out, '_' + blob_out + '_mask'], **kwargs)[0]
