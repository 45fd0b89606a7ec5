"""Per-feature affine maps: caffe2.python.helpers.elementwise_linear, whose
helper brew registers."""

from doppio.helpers._common import _param_initializers
from doppio.model_helper import ParameterTags


def elementwise_linear(model, blob_in, blob_out, dim, weight_init=None, bias_init=None,
                       WeightInitializer=None, BiasInitializer=None, axis=1, **kwargs):
    """ElementwiseLinear: Y = X * w + b over the `dim` features from `axis`,
    with w `<blob_out>_w` (ConstantFill 1) and b `<blob_out>_b` (0)."""
    blob_out = blob_out or model.net.NextName()
    weight_initializer, bias_initializer = _param_initializers(
        model, weight_init or ('ConstantFill', {'value': 1.0}),
        bias_init or ('ConstantFill', {'value': 0.0}), WeightInitializer, BiasInitializer)
    weight = model.create_param(param_name=blob_out + '_w', shape=[dim],
                                initializer=weight_initializer, tags=ParameterTags.WEIGHT)
    bias = model.create_param(param_name=blob_out + '_b', shape=[dim],
                              initializer=bias_initializer, tags=ParameterTags.BIAS)
    return model.net.ElementwiseLinear([blob_in, weight, bias], blob_out, axis=axis, **kwargs)
