"""The optimizers of float16 parameters, Caffe2's (reached through
doppio.optimizer, as caffe2.python.optimizer has them):

  * MultiPrecisionSgdOptimizer / build_multi_precision_sgd: float32 master
    weights (PseudoFP16Initializer's blob_copy) updated by momentum SGD from
    the float16 gradient, the float16 parameter recast from them;
  * FP16SgdOptimizer / build_fp16_sgd: FP16MomentumSGDUpdate on the float16
    parameter itself, weight decay folded in (FP32MomentumSGDUpdate for the
    float32 ones, such as SpatialBN's scale and bias);

and, beyond Caffe2, MultiPrecisionAdamOptimizer / build_multi_precision_adam:
Adam on the float32 master and float32 moments. (The build_* functions are
doppio.optimizer's.)
"""
from doppio import core
from doppio.model_helper import ParameterInfo
from doppio.optimizer_sgd_adam import AdamOptimizer, SgdOptimizer


class MultiPrecisionSgdOptimizer(SgdOptimizer):
    """Momentum SGD for parameters kept in two precisions
    (PseudoFP16Initializer): the float16 gradient is cast to float32, the
    float32 master copy and its momentum are updated, and the float16
    parameter is recast from the master. A parameter with no float32 copy is
    updated as SgdOptimizer does. Caffe2's defaults (Nesterov momentum)."""

    def __init__(self, base_learning_rate=0.1, momentum=0.0, policy='fixed', nesterov=1,
                 sparse_dedup_aggregator=None, **kwargs):
        super(MultiPrecisionSgdOptimizer, self).__init__(
            base_learning_rate=base_learning_rate, policy=policy, momentum=momentum,
            nesterov=nesterov, sparse_dedup_aggregator=sparse_dedup_aggregator, **kwargs)

    def _run(self, net, param_init_net, param_info):
        param_fp32 = _float32_master(param_info)
        if param_fp32 is None:
            return SgdOptimizer._run(self, net, param_init_net, param_info)
        param = param_info.blob
        grad = param_info.grad
        _refuse_sparse(self, param_info)
        if not self._check_rate('base_learning_rate', self.base_learning_rate):
            return
        lr, _ = self.build_lr(net, param_init_net, base_learning_rate=-self.base_learning_rate,
                              policy=self.policy, **self.init_kwargs)
        momentum_data = param_init_net.ConstantFill(
            param_fp32, str(param) + '_momentum', value=0.0)
        self._aux_params.local.append(momentum_data)
        grad_fp32 = net.HalfToFloat(grad, str(grad) + '_fp32')
        net.MomentumSGDUpdate([grad_fp32, momentum_data, lr, param_fp32],
                              [grad_fp32, momentum_data, param_fp32],
                              momentum=self.momentum, nesterov=int(bool(self.nesterov)))
        net.FloatToHalf(param_fp32, param)


def _float32_master(param_info):
    """PseudoFP16Initializer's float32 copy of a float16 parameter, or None."""
    return (param_info.blob_copy or {}).get(core.DataType.FLOAT)


def _refuse_sparse(optimizer, param_info):
    if isinstance(param_info.grad, core.GradientSlice):
        raise ValueError('{}: parameter {} has a sparse gradient, which multi-precision '
                         'updates do not support'.format(type(optimizer).__name__,
                                                         param_info.blob))


class MultiPrecisionAdamOptimizer(AdamOptimizer):
    """Adam for parameters kept in two precisions: the float16 gradient is
    cast to float32, Adam updates the float32 master and its float32 moments
    (`<master>_first_moment`, `<master>_second_moment`), and the float16
    parameter is recast from the master. A parameter with no float32 copy
    is updated as AdamOptimizer does."""

    def _run(self, net, param_init_net, param_info):
        master = _float32_master(param_info)
        if master is None:
            return AdamOptimizer._run(self, net, param_init_net, param_info)
        _refuse_sparse(self, param_info)
        grad_fp32 = net.HalfToFloat(param_info.grad, str(param_info.grad) + '_fp32')
        on_master = ParameterInfo(param_id=None, param=master, shape=param_info.shape,
                                  grad=grad_fp32)
        AdamOptimizer._run(self, net, param_init_net, on_master)
        net.FloatToHalf(master, param_info.blob)


class FP16SgdOptimizer(SgdOptimizer):
    """Caffe2's float16 SGD: FP16MomentumSGDUpdate (weight decay folded
    into the step) on the float16 parameter and a float16 momentum; a float32
    parameter (no float16 blob: SpatialBN's, whose names contain "spatbn", or
    one without copies) gets FP32MomentumSGDUpdate and a float32 momentum.
    Caffe2's defaults: Nesterov, weight_decay 1e-4."""

    def __init__(self, base_learning_rate=0.1, momentum=0.0, policy='fixed', nesterov=1,
                 weight_decay=0.0001, sparse_dedup_aggregator=None, **kwargs):
        super(FP16SgdOptimizer, self).__init__(
            base_learning_rate=base_learning_rate, policy=policy, momentum=momentum,
            nesterov=nesterov, sparse_dedup_aggregator=sparse_dedup_aggregator, **kwargs)
        self.weight_decay = weight_decay

    def _param_and_master(self, param_info, fp32_update):
        """(the blob updated, its float32 twin, whether the update is float32)."""
        param = param_info.blob
        if fp32_update or 'spatbn' in str(param) or not param_info.blob_copy:
            return param, param, True
        copies = param_info.blob_copy
        if core.DataType.FLOAT in copies:
            return param, copies[core.DataType.FLOAT], False
        if core.DataType.FLOAT16 in copies:
            return copies[core.DataType.FLOAT16], param, False
        raise ValueError('FP16SgdOptimizer: parameter {} has copies {} but neither a float32 '
                         'nor a float16 one'.format(param, sorted(copies)))

    def _run(self, net, param_init_net, param_info, fp32_update=False):
        param, param_fp32, fp32 = self._param_and_master(param_info, fp32_update)
        _refuse_sparse(self, param_info)
        if not self._check_rate('base_learning_rate', self.base_learning_rate):
            return
        lr, _ = self.build_lr(net, param_init_net, base_learning_rate=-self.base_learning_rate,
                              policy=self.policy, **self.init_kwargs)
        momentum_fp32 = param_init_net.ConstantFill(
            param_fp32, str(param) + '_momentum_fp32', value=0.0)
        args = dict(momentum=self.momentum, nesterov=int(bool(self.nesterov)),
                    weight_decay=self.weight_decay)
        grad = param_info.grad
        if fp32:
            self._aux_params.local.append(momentum_fp32)
            net.FP32MomentumSGDUpdate([grad, momentum_fp32, lr, param],
                                      [grad, momentum_fp32, param], **args)
            return
        momentum = param_init_net.FloatToHalf(momentum_fp32, str(param) + '_momentum')
        self._aux_params.local.append(momentum)
        net.FP16MomentumSGDUpdate([grad, momentum, lr, param], [grad, momentum, param], **args)
