"""Convolutions: conv (2-D), conv_nd, conv_transpose, group_conv: caffe2.python.helpers.conv, whose helpers
brew registers."""

from doppio.helpers._common import _param_initializers
from doppio.model_helper import ParameterTags


def conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
         bias_init=None, WeightInitializer=None, BiasInitializer=None, group=1,
         transform_inputs=None, use_cudnn=False, order='NCHW',
         cudnn_exhaustive_search=False, ws_nbytes_limit=None,
         float16_compute=False, **kwargs):
    """2-D Conv with weight `<blob_out>_w` ([dim_out, dim_in/group, kh, kw]
    for NCHW, [dim_out, kh, kw, dim_in/group] for NHWC; XavierFill) and,
    unless no_bias, bias `<blob_out>_b` [dim_out] (ConstantFill 0)."""
    if isinstance(kernel, list):
        if len(kernel) != 2:
            raise ValueError('brew.conv supports only a 2D kernel, got {}'.format(kernel))
        kernels = kernel
    else:
        kernels = [kernel] * 2
    requested_engine = kwargs.get('engine')
    if requested_engine is not None:
        if use_cudnn and requested_engine != 'CUDNN':
            raise ValueError('brew.conv: use_cudnn=True conflicts with engine {}'.format(
                requested_engine))
        if not use_cudnn and requested_engine == 'CUDNN':
            raise ValueError('brew.conv: engine CUDNN needs use_cudnn=True')
    use_bias = not kwargs.pop('no_bias', False)
    blob_out = blob_out or model.net.NextName()
    if order == 'NCHW':
        weight_shape = [dim_out, int(dim_in / group)] + kernels
    else:
        weight_shape = [dim_out] + kernels + [int(dim_in / group)]
    weight_initializer, bias_initializer = _param_initializers(
        model, weight_init, bias_init, WeightInitializer, BiasInitializer)
    weight = model.create_param(param_name=blob_out + '_w', shape=weight_shape,
                                initializer=weight_initializer,
                                tags=ParameterTags.WEIGHT)
    inputs = [blob_in, weight]
    if use_bias:
        inputs.append(model.create_param(param_name=blob_out + '_b', shape=[dim_out],
                                         initializer=bias_initializer,
                                         tags=ParameterTags.BIAS))
    if transform_inputs is not None:
        transform_inputs(model, blob_out, inputs)
    if use_cudnn:
        kwargs['engine'] = 'CUDNN'
        kwargs['exhaustive_search'] = cudnn_exhaustive_search
        if ws_nbytes_limit:
            kwargs['ws_nbytes_limit'] = ws_nbytes_limit
    if float16_compute:
        kwargs['float16_compute'] = True
    if group != 1:
        kwargs['group'] = group
    if isinstance(kernel, list):
        return model.net.Conv(inputs, blob_out, kernel_h=kernel[0], kernel_w=kernel[1],
                              order=order, **kwargs)
    return model.net.Conv(inputs, blob_out, kernel=kernel, order=order, **kwargs)


def conv_nd(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
            bias_init=None, WeightInitializer=None, BiasInitializer=None, group=1,
            transform_inputs=None, order='NCHW', **kwargs):
    """N-D Conv (NCHW only): `kernel` an int (square) or one size per spatial
    axis; weight `<blob_out>_w` [dim_out, dim_in/group, *kernel], bias
    `<blob_out>_b` [dim_out] unless no_bias."""
    if order != 'NCHW':
        raise ValueError('brew.conv_nd supports only NCHW, got order {}'.format(order))
    kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel] * 2
    use_bias = not kwargs.pop('no_bias', False)
    blob_out = blob_out or model.net.NextName()
    weight_initializer, bias_initializer = _param_initializers(
        model, weight_init, bias_init, WeightInitializer, BiasInitializer)
    inputs = [blob_in, model.create_param(
        param_name=blob_out + '_w', shape=[dim_out, int(dim_in / group)] + kernels,
        initializer=weight_initializer, tags=ParameterTags.WEIGHT)]
    if use_bias:
        inputs.append(model.create_param(param_name=blob_out + '_b', shape=[dim_out],
                                         initializer=bias_initializer,
                                         tags=ParameterTags.BIAS))
    if transform_inputs is not None:
        transform_inputs(model, blob_out, inputs)
    if group != 1:
        kwargs['group'] = group
    return model.net.Conv(inputs, blob_out, kernels=kernels, order=order, **kwargs)


def conv_transpose(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
                   bias_init=None, use_cudnn=False, order='NCHW', cudnn_exhaustive_search=False,
                   ws_nbytes_limit=None, **kwargs):
    """2-D ConvTranspose with weight `<blob_out>_w` ([dim_in, dim_out, k, k]
    for NCHW, [dim_in, k, k, dim_out] for NHWC; XavierFill) and bias
    `<blob_out>_b` [dim_out] (ConstantFill 0)."""
    blob_out = blob_out or model.net.NextName()
    weight_shape = ([dim_in, dim_out, kernel, kernel] if order == 'NCHW'
                    else [dim_in, kernel, kernel, dim_out])
    weight_initializer, bias_initializer = _param_initializers(
        model, weight_init, bias_init, None, None)
    weight = model.create_param(param_name=blob_out + '_w', shape=weight_shape,
                                initializer=weight_initializer, tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=blob_out + '_b', shape=[dim_out],
                              initializer=bias_initializer, tags=ParameterTags.BIAS)
    if use_cudnn:
        kwargs['engine'] = 'CUDNN'
        kwargs['exhaustive_search'] = cudnn_exhaustive_search
        if ws_nbytes_limit:
            kwargs['ws_nbytes_limit'] = ws_nbytes_limit
    return model.net.ConvTranspose([blob_in, weight, bias], blob_out, kernel=kernel,
                                   order=order, **kwargs)


def group_conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
               bias_init=None, group=1, **kwargs):
    """conv with `group` groups (Caffe2's name for it)."""
    return conv(model, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=weight_init,
                bias_init=bias_init, group=group, **kwargs)
