"""Layer helpers, as in caffe2.python.brew: `brew.fc(model, 'x', 'y', 4, 3)`
adds the layer's parameters to model.param_init_net (with Caffe2's names:
y_w, y_b ...) and its operator to model.net.

Each helper receives the model's arg_scope (order, use_cudnn, ...) and the
keywords of any enclosing `brew.arg_scope`, explicit keywords winning. The
helpers themselves live in doppio.helpers, one module per family, as in
Caffe2; this module registers them."""

import copy
import functools
import inspect

from doppio import model_helper
from doppio.helpers.algebra import batch_mat_mul, sum, transpose
from doppio.helpers.arg_scope import arg_scope, get_current_scope  # noqa: F401
from doppio.helpers.array_helpers import concat, depth_concat
from doppio.helpers.control_ops import cond, loop
from doppio.helpers.conv import conv, conv_nd, conv_transpose, group_conv
from doppio.helpers.db_input import db_input
from doppio.helpers.dropout import dropout
from doppio.helpers.elementwise_linear import elementwise_linear
from doppio.helpers.fc import fc
from doppio.helpers.nonlinearity import prelu, relu, tanh
from doppio.helpers.normalization import instance_norm, layer_norm, lrn, softmax, spatial_bn
from doppio.helpers.pooling import average_pool, max_pool
from doppio.helpers.tools import image_input
from doppio.helpers.train import accuracy, add_weight_decay, iter


# ---- registry ----

_registry = {}


def _scope_wrapper(func):
    """Calls `func` with the model's arg_scope (only the keywords it takes,
    unless it takes **kwargs), then brew.arg_scope's, then the caller's."""
    signature = inspect.signature(func)
    takes_var_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD
                           for p in signature.parameters.values())
    accepted = set(signature.parameters)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if args and isinstance(args[0], model_helper.ModelHelper):
            model = args[0]
        elif 'model' in kwargs:
            model = kwargs['model']
        else:
            raise RuntimeError('brew.{}: the first argument must be the model (a '
                               'ModelHelper), or pass model=<your model>'.format(
                                   func.__name__))
        new_kwargs = copy.deepcopy(model.arg_scope)
        if not takes_var_kwargs:
            new_kwargs = {k: v for k, v in new_kwargs.items() if k in accepted}
        new_kwargs.update(get_current_scope().get(func.__name__, {}))
        new_kwargs.update(kwargs)
        return func(*args, **new_kwargs)
    return wrapper


def Register(helper):
    """Makes `helper(model, ...)` available as brew.<its name>."""
    name = helper.__name__
    if name in _registry:
        raise AttributeError('Helper {} already exists. Please change your '
                             'helper name.'.format(name))
    _registry[name] = helper
    globals()[name] = _scope_wrapper(helper)


def has_helper(helper_or_helper_name):
    name = helper_or_helper_name if isinstance(helper_or_helper_name, str) \
        else helper_or_helper_name.__name__
    return name in _registry


for _helper in [fc, conv, conv_nd, conv_transpose, group_conv, spatial_bn, max_pool,
                average_pool, relu, softmax, dropout, sum, concat, depth_concat, accuracy,
                db_input, image_input, tanh, transpose, batch_mat_mul, prelu, lrn,
                instance_norm, layer_norm, iter, elementwise_linear, add_weight_decay, cond,
                loop]:
    Register(_helper)
