"""Layer helpers, as in caffe2.python.brew: `brew.fc(model, 'x', 'y', 4, 3)`
adds the layer's parameters to model.param_init_net (with Caffe2's names:
y_w, y_b ...) and its operator to model.net.

Each helper receives the model's arg_scope (order, use_cudnn, ...) and the
keywords of any enclosing `brew.arg_scope`, explicit keywords winning."""

import contextlib
import copy
import functools
import inspect
import threading

from doppio import core
from doppio import model_helper
from doppio import scope
from doppio.modeling.initializers import Initializer
from doppio.model_helper import ParameterTags, update_initializer, ExternalInitializer
from doppio.proto import doppio_pb2 as caffe2_pb2

_threadlocal_scope = threading.local()


def get_current_scope():
    if not hasattr(_threadlocal_scope, 'current_scope'):
        _threadlocal_scope.current_scope = {}
    return _threadlocal_scope.current_scope


@contextlib.contextmanager
def arg_scope(single_helper_or_list, **kwargs):
    """Default keywords for the given helpers inside the block."""
    helpers = single_helper_or_list
    if not isinstance(helpers, list):
        helpers = [helpers]
    for helper in helpers:
        if not callable(helper):
            raise TypeError('arg_scope takes helper functions, got {!r}'.format(helper))
    old_scope = copy.deepcopy(get_current_scope())
    for helper in helpers:
        get_current_scope().setdefault(helper.__name__, {}).update(kwargs)
    try:
        yield
    finally:
        _threadlocal_scope.current_scope = old_scope


def _param_initializers(model, weight_init, bias_init, WeightInitializer,
                        BiasInitializer):
    if not model.init_params:
        return ExternalInitializer(), ExternalInitializer()
    return (update_initializer(WeightInitializer, weight_init, ('XavierFill', {})),
            update_initializer(BiasInitializer, bias_init, ('ConstantFill', {})))


# ---- helpers with parameters ----

def fc(model, blob_in, blob_out, dim_in, dim_out, weight_init=None,
       bias_init=None, WeightInitializer=None, BiasInitializer=None,
       enable_tensor_core=False, float16_compute=False, **kwargs):
    """FC with weight `<blob_out>_w` [dim_out, dim_in] (XavierFill) and bias
    `<blob_out>_b` [dim_out] (ConstantFill 0)."""
    weight_initializer, bias_initializer = _param_initializers(
        model, weight_init, bias_init, WeightInitializer, BiasInitializer)
    blob_out = blob_out or model.net.NextName()
    bias_tags = [ParameterTags.BIAS]
    if 'freeze_bias' in kwargs:
        bias_tags.append(ParameterTags.COMPUTED_PARAM)
    weight = model.create_param(param_name=blob_out + '_w', shape=[dim_out, dim_in],
                                initializer=weight_initializer,
                                tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=blob_out + '_b', shape=[dim_out],
                              initializer=bias_initializer, tags=bias_tags)
    if enable_tensor_core:
        kwargs['engine'] = 'TENSORCORE'
    if float16_compute:
        kwargs['float16_compute'] = True
    return model.net.FC([blob_in, weight, bias], blob_out, **kwargs)


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


# ---- helpers without parameters ----

def _with_cudnn(use_cudnn, kwargs):
    if use_cudnn:
        kwargs['engine'] = 'CUDNN'
    return kwargs


def max_pool(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.MaxPool(blob_in, blob_out, order=order,
                             **_with_cudnn(use_cudnn, kwargs))


def average_pool(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.AveragePool(blob_in, blob_out, order=order,
                                 **_with_cudnn(use_cudnn, kwargs))


def relu(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.Relu(blob_in, blob_out, order=order, **_with_cudnn(use_cudnn, kwargs))


def softmax(model, blob_in, blob_out=None, use_cudnn=False, **kwargs):
    kwargs = _with_cudnn(use_cudnn, kwargs)
    if blob_out is not None:
        return model.net.Softmax(blob_in, blob_out, **kwargs)
    return model.net.Softmax(blob_in, **kwargs)


def dropout(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    """Dropout writing `blob_out` and the mask `_<blob_out>_mask`; is_test
    is required, as in Caffe2, so train and test nets are explicit."""
    kwargs['engine'] = 'CUDNN' if use_cudnn else 'DEFAULT'
    if 'is_test' not in kwargs:
        raise ValueError("brew.dropout: argument 'is_test' is required")
    return model.net.Dropout(blob_in, [blob_out, '_' + blob_out + '_mask'], **kwargs)[0]


def sum(model, blob_in, blob_out, **kwargs):
    return model.net.Sum(blob_in, blob_out, **kwargs)


def concat(model, blobs_in, blob_out, **kwargs):
    """Concat writing `blob_out` and the split sizes `_<blob_out>_concat_dims`."""
    if kwargs.get('order') and kwargs.get('axis'):
        # The op refuses both; an explicit axis wins over the scope's order.
        kwargs.pop('order')
    return model.net.Concat(blobs_in, [blob_out, '_' + blob_out + '_concat_dims'],
                            **kwargs)[0]


def depth_concat(model, blobs_in, blob_out, **kwargs):
    return concat(model, blobs_in, blob_out, **kwargs)


def accuracy(model, blob_in, blob_out, **kwargs):
    """Top-k accuracy of predictions [N, D] against int labels [N]; `top_k`
    defaults to 1 in the op. Layout arguments of the scope do not apply."""
    kwargs.pop('order', None)
    return model.net.Accuracy(blob_in, blob_out, **kwargs)


def db_input(model, blobs_out, batch_size, db, db_type, **kwargs):
    """Reads `batch_size` records per run of model.net from a DB of
    TensorProtos (one output per tensor of a record). The reader is made once
    by model.param_init_net; `dbreader_<db>` is its blob, as in Caffe2. Other
    keywords (Doppio's shuffle_buffer, shuffle_seed) go to the reader op."""
    kwargs.pop('order', None)
    reader = model.param_init_net.CreateDB(
        [], 'dbreader_' + str(db), db=db, db_type=db_type)
    return model.net.TensorProtosDBInput(reader, blobs_out, batch_size=batch_size,
                                         **kwargs)


def tanh(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.Tanh(blob_in, blob_out, **_with_cudnn(use_cudnn, kwargs))


def transpose(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    return model.net.Transpose(blob_in, blob_out, **_with_cudnn(use_cudnn, kwargs))


def batch_mat_mul(model, blob_in, blob_out, enable_tensor_core=False, **kwargs):
    if enable_tensor_core:
        kwargs['engine'] = 'TENSORCORE'
    return model.net.BatchMatMul(blob_in, blob_out, **kwargs)


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


def lrn(model, blob_in, blob_out, order='NCHW', use_cudnn=False, **kwargs):
    """LRN; on the CPU it also writes `_<blob_out>_scale` (the gradient's)."""
    device = kwargs.get('device_option', scope.CurrentDeviceScope())
    on_cpu = device is None or device.device_type == caffe2_pb2.CPU
    if use_cudnn and not on_cpu:
        kwargs['engine'] = 'CUDNN'
        return model.net.LRN(blob_in, blob_out, order=order, **kwargs)
    return model.net.LRN(blob_in, [blob_out, '_' + blob_out + '_scale'], order=order,
                         **kwargs)[0]


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


def iter(model, blob_out, **kwargs):
    """An int64 counter made (0) on the CPU by param_init_net and incremented
    by each run of the net."""
    kwargs.pop('device_option', None)
    model.param_init_net.ConstantFill([], blob_out, shape=[1], value=0,
                                      dtype=core.DataType.INT64,
                                      device_option=core.DeviceOption(caffe2_pb2.CPU, 0),
                                      **kwargs)
    return model.net.Iter(blob_out, blob_out, **kwargs)


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


for _helper in [fc, conv, spatial_bn, max_pool, average_pool, relu, softmax,
                dropout, sum, concat, depth_concat, accuracy, db_input, image_input, tanh,
                transpose, batch_mat_mul, prelu, lrn, instance_norm, layer_norm, iter]:
    Register(_helper)
