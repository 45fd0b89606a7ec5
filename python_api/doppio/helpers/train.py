"""Training helpers: accuracy, the iteration counter, weight decay: caffe2.python.helpers.train, whose helpers
brew registers."""

from doppio import core
from doppio import scope
from doppio.proto import doppio_pb2 as caffe2_pb2


def accuracy(model, blob_in, blob_out, **kwargs):
    """Top-k accuracy of predictions [N, D] against int labels [N]; `top_k`
    defaults to 1 in the op. Layout arguments of the scope do not apply."""
    kwargs.pop('order', None)
    return model.net.Accuracy(blob_in, blob_out, **kwargs)


def iter(model, blob_out, **kwargs):
    """An int64 counter made (0) on the CPU by param_init_net and incremented
    by each run of the net."""
    kwargs.pop('device_option', None)
    model.param_init_net.ConstantFill([], blob_out, shape=[1], value=0,
                                      dtype=core.DataType.INT64,
                                      device_option=core.DeviceOption(caffe2_pb2.CPU, 0),
                                      **kwargs)
    return model.net.Iter(blob_out, blob_out, **kwargs)


def _get_weights(model, namescope=None):
    """The model's weights under `namescope` (default the current one; ''
    means all)."""
    if namescope is None:
        namescope = scope.CurrentNameScope()
    if namescope == '':
        return model.weights[:]
    return [w for w in model.weights if w.GetNameScope() == namescope]


def add_weight_decay(model, weight_decay):
    """L2 regularization of the weights in the current name scope: each
    weight's gradient gets weight_decay * weight added (after
    AddGradientOperators, before the update). Nothing for weight_decay <= 0."""
    if weight_decay <= 0.0:
        return
    decay = model.param_init_net.ConstantFill([], 'wd', shape=[1], value=weight_decay)
    one = model.param_init_net.ConstantFill([], 'ONE', shape=[1], value=1.0)
    for weight in _get_weights(model):
        grad = model.param_to_grad[weight]
        model.net.WeightedSum([grad, one, weight, decay], grad)
