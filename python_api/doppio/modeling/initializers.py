"""How brew helpers create parameters (caffe2.python.modeling.initializers).

A helper such as brew.fc knows the shapes and a default fill; the model's
user picks the Initializer class (arg_scope(WeightInitializer=...)), which
decides what ops param_init_net gets:
  * Initializer: one fill op making the parameter,
  * ExternalInitializer: none (the blob comes from a checkpoint),
  * PseudoFP16Initializer: a float32 master copy and its float16 cast, the
    float16 blob being the parameter (mixed-precision training),
  * ReversePseudoFP16Initializer: the float32 blob is the parameter, with a
    float16 copy beside it.
"""
from doppio import core_net as core
from doppio.modeling.parameter_info import ParameterInfo


class Initializer(object):
    """Creates a parameter with one fill op (operator_name, e.g. XavierFill,
    with operator_kwargs) of param_init_net."""

    def __init__(self, operator_name=None, **kwargs):
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def update(self, operator_name, kwargs):
        if self.operator_name is not None:
            raise ValueError('Operator name overwrites are not allowed (the initializer '
                             'already uses {})'.format(self.operator_name))
        self.operator_name = operator_name
        self.operator_kwargs = kwargs

    def _fill(self, init_net, name, shape):
        if self.operator_name is None:
            raise ValueError('{} for {} has no fill operator'.format(
                type(self).__name__, name))
        return getattr(init_net, self.operator_name)(
            [], name, shape=list(shape), **self.operator_kwargs)

    def create_param(self, param_name, init_net, shape):
        param = self._fill(init_net, param_name, shape)
        return ParameterInfo(param_id=None, param=param, shape=shape)


class ExternalInitializer(object):
    """For parameters provided in the workspace before param_init_net runs
    (a checkpoint, another model): nothing is added to param_init_net."""

    def create_param(self, param_name, init_net, shape):
        if isinstance(param_name, core.BlobReference):
            param = core.BlobReference(str(param_name), init_net)
        elif isinstance(param_name, str):
            param = core.ScopedBlobReference(param_name, init_net)
        else:
            raise TypeError('Unsupported type for param_name: {}'.format(
                type(param_name).__name__))
        return ParameterInfo(param_id=None, param=param, shape=shape)


class PseudoFP16Initializer(Initializer):
    """A float16 parameter for compute with its float32 master copy
    `<name>_fp32`, which optimizers update (so small updates do not vanish
    in float16) before casting it back."""

    def create_param(self, param_name, init_net, shape):
        param_fp32 = self._fill(init_net, str(param_name) + '_fp32', shape)
        param = init_net.FloatToHalf(param_fp32, param_name)
        return ParameterInfo(param_id=None, param=param, shape=shape,
                             blob_copy={core.DataType.FLOAT: param_fp32})


class ReversePseudoFP16Initializer(Initializer):
    """A float32 parameter with a float16 copy `<name>_fp16`."""

    def create_param(self, param_name, init_net, shape):
        param = self._fill(init_net, param_name, shape)
        param_fp16 = init_net.FloatToHalf(param, str(param_name) + '_fp16')
        return ParameterInfo(param_id=None, param=param, shape=shape,
                             blob_copy={core.DataType.FLOAT16: param_fp16})


def update_initializer(initializer_class, operator_name_and_kwargs,
                       default_operator_name_and_kwargs):
    """The initializer a helper uses: `initializer_class` (an Initializer
    class; default Initializer) built with the explicit (op name, kwargs)
    pair or else the helper's default. An Initializer object is accepted as
    it is (it already knows its op)."""
    name, kwargs = operator_name_and_kwargs or default_operator_name_and_kwargs
    if initializer_class is None:
        return Initializer(name, **kwargs)
    if isinstance(initializer_class, type):
        return initializer_class(name, **kwargs)
    return initializer_class
