"""SgdOptimizer and AdamOptimizer, the two update rules the optimizers of
float16 parameters (doppio.optimizer_precision) build on; doppio.optimizer
has them with the rest, as caffe2.python.optimizer does."""
from doppio import core
from doppio.optimizer_base import Optimizer, _constant_on_device


def _per_row_zeros(param_init_net, param, name):
    """Zeros with one element per row (dim 0) of `param`, for row-wise
    optimizer state; the row count is read from param when init runs."""
    shape = param_init_net.Shape(param, str(param) + '_shape')
    rows = param_init_net.Slice([shape], str(param) + '_numrows', starts=[0], ends=[1])
    return param_init_net.ConstantFill(rows, name, input_as_shape=1, value=0.0)


class SgdOptimizer(Optimizer):
    """Plain SGD (WeightedSum) or, with momentum > 0, MomentumSGDUpdate
    (Nesterov unless nesterov=False); sparse gradients update only their
    rows."""

    def __init__(self, base_learning_rate=0.01, policy='fixed', momentum=0.0,
                 nesterov=True, sparse_dedup_aggregator=None, lars=None, **kwargs):
        super(SgdOptimizer, self).__init__()
        if momentum < 0:
            raise ValueError('SgdOptimizer: momentum must be >= 0, got {}'.format(momentum))
        self.base_learning_rate = base_learning_rate
        self.policy = policy
        self.momentum = momentum
        self.nesterov = nesterov
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.lars = lars
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param = param_info.blob
        grad = param_info.grad
        if not self._check_rate('base_learning_rate', self.base_learning_rate):
            return
        # MomentumSGDUpdate subtracts its lr, WeightedSum adds it.
        lr_sign = -1 if self.momentum else 1
        lr, _ = self.build_lr(net, param_init_net,
                              base_learning_rate=self.base_learning_rate * lr_sign,
                              policy=self.policy,
                              param_multiplier=self._lars_multiplier(net, param, grad),
                              **self.init_kwargs)
        one, _ = _constant_on_device(param_init_net, 'ONE', 1.0)
        self._add_shared(one)

        if self.momentum > 0:
            momentum_data = param_init_net.ConstantFill(
                [param], str(param) + '_momentum', value=0.0)
            self._aux_params.local.append(momentum_data)

        if isinstance(grad, core.GradientSlice):
            grad = self.dedup(net, self.sparse_dedup_aggregator, grad)
            if self.momentum > 0:
                net.SparseMomentumSGDUpdate(
                    [grad.values, momentum_data, lr, param, grad.indices],
                    [grad.values, momentum_data, param],
                    momentum=self.momentum, nesterov=int(bool(self.nesterov)))
            else:
                self._sparse_plain_sgd(net, param_init_net, param, grad, lr)
        elif self.momentum > 0:
            net.MomentumSGDUpdate(
                [grad, momentum_data, lr, param], [grad, momentum_data, param],
                momentum=self.momentum, nesterov=int(bool(self.nesterov)))
        else:
            net.WeightedSum([param, one, grad, lr], param)

    def _sparse_plain_sgd(self, net, param_init_net, param, grad, lr):
        # Caffe2 uses ScatterWeightedSum here, which Doppio lacks. A
        # momentum-free SparseMomentumSGDUpdate performs the same row update
        # (param[i] += lr * g, repeated indices accumulating); it wants the
        # positive step size and a scratch buffer for its (unused) momentum.
        positive_lr_name = self.make_unique_blob_name('positive_lr')
        if net.BlobIsDefined(positive_lr_name):
            positive_lr = core.BlobReference(positive_lr_name, net)
        else:
            positive_lr = net.Scale(lr, positive_lr_name, scale=-1.0)
        scratch = param_init_net.ConstantFill([param], str(param) + '_sparse_sgd_step',
                                              value=0.0)
        net.SparseMomentumSGDUpdate(
            [grad.values, scratch, positive_lr, param, grad.indices],
            [grad.values, scratch, param], momentum=0.0, nesterov=0)

    def scale_learning_rate(self, scale):
        self.base_learning_rate *= scale


class AdamOptimizer(Optimizer):
    """Adam with Caffe2's bias correction: Adam, or for a sparse gradient
    SparseAdam (RowWiseSparseAdam with rowWise, one second moment per
    row)."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 policy='fixed', use_lr_adaption=False, lr_alpha=0.01,
                 normalized_lr_adaption=True, sparse_dedup_aggregator=None,
                 rowWise=False, engine='', enableRAdam=False, use_smart_decay=False,
                 **kwargs):
        super(AdamOptimizer, self).__init__()
        for option, value, why in [
                ('use_lr_adaption', use_lr_adaption, 'no LearningRateAdaption operator'),
                ('enableRAdam', enableRAdam, 'no RAdam in the Adam operator'),
                ('use_smart_decay', use_smart_decay, 'no SmartDecaySparseAdam operator')]:
            if value:
                self._refuse(option, value, why)
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.policy = policy
        self.use_lr_adaption = use_lr_adaption
        self.lr_alpha = lr_alpha
        self.normalized_lr_adaption = normalized_lr_adaption
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.rowWise = rowWise
        self.engine = engine
        self.enableRAdam = enableRAdam
        self.use_smart_decay = use_smart_decay
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param = param_info.blob
        grad = param_info.grad
        if not self._check_rate('alpha', self.alpha):
            return
        sparse = isinstance(grad, core.GradientSlice)
        if self.rowWise and not sparse:
            raise NotImplementedError('AdamOptimizer: rowWise is only supported for sparse '
                                      'gradients (parameter {})'.format(param))
        lr, iteration = self.build_lr(net, param_init_net, base_learning_rate=self.alpha,
                                      policy=self.policy, **self.init_kwargs)
        first_moment = param_init_net.ConstantFill(
            [param], str(param) + '_first_moment', value=0.0)
        if self.rowWise:
            second_moment = _per_row_zeros(param_init_net, param,
                                           str(param) + '_avg_second_moment')
        else:
            second_moment = param_init_net.ConstantFill(
                [param], str(param) + '_second_moment', value=0.0)
        self._add_shared(iteration)
        self._aux_params.local.append(first_moment)
        self._aux_params.local.append(second_moment)
        kwargs = dict(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)
        if self.engine:
            kwargs['engine'] = self.engine
        state = [param, first_moment, second_moment]
        if sparse:
            grad = self.dedup(net, self.sparse_dedup_aggregator, grad)
            update = net.RowWiseSparseAdam if self.rowWise else net.SparseAdam
            update(state + [grad.indices, grad.values, lr, iteration], state, **kwargs)
        else:
            net.Adam(state + [grad, lr, iteration], state, **kwargs)

    def scale_learning_rate(self, scale):
        self.alpha *= scale
