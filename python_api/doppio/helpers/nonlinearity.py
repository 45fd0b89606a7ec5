"""Nonlinearities (caffe2.python.helpers.nonlinearity; brew registers them)."""

from doppio import core
from doppio.helpers._common import _with_cudnn


def relu(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.Relu(blob_in, blob_out, order=order, **_with_cudnn(use_cudnn, kwargs))


def tanh(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.Tanh(blob_in, blob_out, **_with_cudnn(use_cudnn, kwargs))


def prelu(model, blob_in, blob_out, num_channels=1, slope_init=None, **kwargs):
    """PRelu with a trained slope `<blob_out>_slope` [num_channels]
    (ConstantFill 0.25 unless slope_init = (op, kwargs))."""
    op_name, op_kwargs = slope_init or ('ConstantFill', {'value': 0.25})
    if model.init_params:
        slope = getattr(model.param_init_net, op_name)(
            [], blob_out + '_slope', shape=[num_channels], **op_kwargs)
    else:
        slope = core.ScopedBlobReference(blob_out + '_slope', model.param_init_net)
    model.AddParameter(slope)
    return model.net.PRelu([blob_in, slope], [blob_out])
