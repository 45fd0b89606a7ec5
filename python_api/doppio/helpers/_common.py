"""Shared by the helper modules: default parameter initializers and the
cuDNN engine switch."""

from doppio.model_helper import ExternalInitializer, update_initializer


def _param_initializers(model, weight_init, bias_init, WeightInitializer,
                        BiasInitializer):
    if not model.init_params:
        return ExternalInitializer(), ExternalInitializer()
    return (update_initializer(WeightInitializer, weight_init, ('XavierFill', {})),
            update_initializer(BiasInitializer, bias_init, ('ConstantFill', {})))


def _with_cudnn(use_cudnn, kwargs):
    if use_cudnn:
        kwargs['engine'] = 'CUDNN'
    return kwargs
