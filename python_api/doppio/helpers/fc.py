"""Fully connected layers (caffe2.python.helpers.fc; brew registers them)."""

from doppio.helpers._common import _param_initializers
from doppio.model_helper import ParameterTags


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
