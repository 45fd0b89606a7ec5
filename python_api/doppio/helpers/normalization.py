"""Normalizations and softmax: caffe2.python.helpers.normalization, whose helpers
brew registers."""

from doppio import scope
from doppio.helpers._common import _with_cudnn
from doppio.model_helper import ExternalInitializer, ParameterTags, update_initializer
from doppio.modeling.initializers import Initializer
from doppio.proto import doppio_pb2 as caffe2_pb2


def spatial_bn(model, blob_in, blob_out, dim_in, init_scale=1., init_bias=0.,
               ScaleInitializer=None, BiasInitializer=None,
               RunningMeanInitializer=None, RunningVarianceInitializer=None,
               order='NCHW', **kwargs):
    """SpatialBN with scale `_s` (init_scale) and bias `_b` (init_bias) as
    trained parameters, running mean `_rm` (0) and running inverse variance
    `_riv` (1) as computed ones; in training it also writes the saved
    statistics `_sm` and `_siv`."""
    blob_out = blob_out or model.net.NextName()
    if model.init_params:
        initializers = [
            update_initializer(ScaleInitializer, ('ConstantFill', {'value': init_scale}), None),
            update_initializer(BiasInitializer, ('ConstantFill', {'value': init_bias}), None),
            update_initializer(RunningMeanInitializer, ('ConstantFill', {'value': 0.0}), None),
            update_initializer(RunningVarianceInitializer,
                               ('ConstantFill', {'value': 1.0}), None),
        ]
    else:
        initializers = [ExternalInitializer() for _ in range(4)]
    tags = [ParameterTags.WEIGHT, ParameterTags.BIAS,
            ParameterTags.COMPUTED_PARAM, ParameterTags.COMPUTED_PARAM]
    scale, bias, running_mean, running_inv_var = [
        model.create_param(param_name=blob_out + '_' + suffix, shape=[dim_in],
                           initializer=initializer, tags=tag)
        for suffix, initializer, tag in zip(['s', 'b', 'rm', 'riv'], initializers, tags)]
    inputs = [blob_in, scale, bias, running_mean, running_inv_var]
    if kwargs.get('is_test'):
        return model.net.SpatialBN(inputs, [blob_out], order=order, **kwargs)
    outputs = [blob_out, running_mean, running_inv_var, blob_out + '_sm', blob_out + '_siv']
    return model.net.SpatialBN(inputs, outputs, order=order, **kwargs)[0]


def lrn(model, blob_in, blob_out, order='NCHW', use_cudnn=False, **kwargs):
    """LRN; on the CPU it also writes `_<blob_out>_scale` (the gradient's)."""
    device = kwargs.get('device_option', scope.CurrentDeviceScope())
    on_cpu = device is None or device.device_type == caffe2_pb2.CPU
    if use_cudnn and not on_cpu:
        kwargs['engine'] = 'CUDNN'
        return model.net.LRN(blob_in, blob_out, order=order, **kwargs)
    return model.net.LRN(blob_in, [blob_out, '_' + blob_out + '_scale'], order=order,
                         **kwargs)[0]


def softmax(model, blob_in, blob_out=None, use_cudnn=False, **kwargs):
    kwargs = _with_cudnn(use_cudnn, kwargs)
    if blob_out is not None:
        return model.net.Softmax(blob_in, blob_out, **kwargs)
    return model.net.Softmax(blob_in, **kwargs)


def instance_norm(model, blob_in, blob_out, dim_in, order='NCHW', **kwargs):
    """InstanceNorm with scale `_s` (1) and bias `_b` (0); in training it also
    writes the saved mean `_sm` and inverse std `_siv`."""
    blob_out = blob_out or model.net.NextName()
    scale = model.param_init_net.ConstantFill([], blob_out + '_s', shape=[dim_in], value=1.0)
    bias = model.param_init_net.ConstantFill([], blob_out + '_b', shape=[dim_in], value=0.0)
    model.AddParameter(scale, ParameterTags.WEIGHT)
    model.AddParameter(bias, ParameterTags.BIAS)
    if kwargs.get('is_test'):
        return model.net.InstanceNorm([blob_in, scale, bias], [blob_out], order=order, **kwargs)
    return model.net.InstanceNorm([blob_in, scale, bias],
                                  [blob_out, blob_out + '_sm', blob_out + '_siv'],
                                  order=order, **kwargs)[0]


def layer_norm(model, blob_in, blob_out, dim_in, axis=1, epsilon=1e-4, initial_scale=1.0,
               initial_bias=0.0):
    """LayerNorm over the dims from `axis` on, then a learned per-feature
    scale `<blob_out>_scale` and bias `<blob_out>_bias` (dim_in each).
    Returns (the result, the mean, the std)."""
    normalized, mean, stdev = model.net.LayerNorm(
        [blob_in], [blob_out, blob_out + '_mean', blob_out + '_stdev'], axis=axis,
        epsilon=epsilon)
    scale = model.create_param(param_name='{}_scale'.format(blob_out), shape=[dim_in],
                               initializer=Initializer('ConstantFill', value=initial_scale),
                               tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name='{}_bias'.format(blob_out), shape=[dim_in],
                              initializer=Initializer('ConstantFill', value=initial_bias),
                              tags=ParameterTags.BIAS)
    scaled = model.net.Mul([normalized, scale], ['{}_scaled'.format(blob_out)], broadcast=1,
                           axis=axis)
    biased = model.net.Add([scaled, bias], ['{}_biased'.format(blob_out)], broadcast=1,
                           axis=axis)
    return biased, mean, stdev
