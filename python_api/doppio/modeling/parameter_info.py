"""What a model knows about one parameter (caffe2.python.modeling.
parameter_info)."""
from doppio import core_net as core


class ParameterTags(object):
    """Tags under Caffe2's names; COMPUTED_PARAM marks blobs the net updates
    itself (batch-norm running statistics) and optimizers must leave alone."""
    BIAS = 'BIAS'
    WEIGHT = 'WEIGHT'
    COMPUTED_PARAM = 'COMPUTED_PARAM'


class ParameterType(object):
    DENSE = 'dense'
    SPARSE = 'sparse'


def _product(shape):
    size = 1
    for dim in shape:
        size *= dim
    return size


class ParameterInfo(object):
    """A parameter's blob, shape and gradient; `blob_copy` maps a
    TensorProto.DataType to the same parameter kept in another precision
    (PseudoFP16Initializer's float32 master copy of a float16 weight)."""

    def __init__(self, param_id, param, key=None, shape=None, length=None,
                 grad=None, blob_copy=None):
        if not isinstance(param, core.BlobReference):
            raise TypeError('ParameterInfo needs a BlobReference, got {}'.format(
                type(param).__name__))
        self.param_id = param_id
        self.name = str(param)
        self.blob = param
        self.key = key
        self.shape = shape
        self.size = None if shape is None else _product(shape)
        self.length = max(1, length if length is not None else 1)
        self.grad = grad
        self._cloned_init_net = None
        self.blob_copy = blob_copy
        self._optimizer = None
        self.regularizer = None

    def grad_type(self):
        """DENSE or SPARSE, or None while the parameter has no gradient."""
        if self.grad is None:
            return None
        if isinstance(self.grad, core.GradientSlice):
            return ParameterType.SPARSE
        return ParameterType.DENSE

    @property
    def parameter(self):
        return self.blob

    @property
    def optimizer(self):
        return self._optimizer

    @optimizer.setter
    def optimizer(self, value):
        if self._optimizer is not None and value is not None:
            raise ValueError('parameter {} already has an optimizer'.format(self.name))
        self._optimizer = value

    def __str__(self):
        return self.name
