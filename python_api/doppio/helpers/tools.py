"""Image input from a DB of images (caffe2.python.helpers.tools; brew registers them)."""



def image_input(model, blob_in, blob_out, order='NCHW', use_gpu_transform=False, **kwargs):
    """Caffe2's helper over ImageInput (operators/image_input_op.h): the
    images come out NHWC and an NHWC2NCHW op makes blob_out[0] NCHW; with
    use_gpu_transform the op writes NCHW itself; order='NHWC' keeps NHWC.
    `is_test` is required, as in Caffe2."""
    if 'is_test' not in kwargs:
        raise ValueError("brew.image_input: the argument 'is_test' is required")
    for engine_arg in ('use_cudnn', 'cudnn_exhaustive_search', 'ws_nbytes_limit'):
        kwargs.pop(engine_arg, None)  # the model's arg scope; not the reader's
    blob_out = list(blob_out)
    if order != 'NCHW':
        return model.net.ImageInput(blob_in, blob_out, **kwargs)
    if use_gpu_transform:
        kwargs['use_gpu_transform'] = 1
        return model.net.ImageInput(blob_in, blob_out, **kwargs)
    outputs = list(model.net.ImageInput(blob_in, [blob_out[0] + '_nhwc'] + blob_out[1:],
                                        **kwargs))
    outputs[0] = model.net.NHWC2NCHW(outputs[0], blob_out[0])
    return tuple(outputs)
