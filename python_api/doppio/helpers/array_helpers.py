"""Concatenation (caffe2.python.helpers.array_helpers; brew registers them)."""



def concat(model, blobs_in, blob_out, **kwargs):
    """Concat writing `blob_out` and the split sizes `_<blob_out>_concat_dims`."""
    if kwargs.get('order') and kwargs.get('axis'):
        # The op refuses both; an explicit axis wins over the scope's order.
        kwargs.pop('order')
    return model.net.Concat(blobs_in, [blob_out, '_' + blob_out + '_concat_dims'],
                            **kwargs)[0]


def depth_concat(model, blobs_in, blob_out, **kwargs):
    return concat(model, blobs_in, blob_out, **kwargs)
