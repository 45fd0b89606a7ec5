"""Parameter updates, as in caffe2.python.optimizer: the optimizers and
their build_* functions; their base class and shared helpers are in
doppio.optimizer_base (see there for the blob names they use).

`build_sgd(model, 0.1, momentum=0.9)` appends to model.net, for every
parameter with a gradient, the learning-rate computation and the update op,
and to model.param_init_net the state they need.
"""

import numpy as np

from doppio import core
from doppio import workspace
# Caffe2 scripts and tests reach the base's names through this module.
from doppio.optimizer_base import (  # noqa: F401
    AuxOptimizerParams, BuildUniqueMutexIter, LEARNING_RATE_POLICIES, Optimizer,
    _LEARNING_RATE_INJECTION, _OPTIMIZER_ITERATION_NAME, _constant_on_device, _cpu_device,
    _optimizer_instance_count,
    reset_optimizer_instance_count)
# SGD and Adam, and the optimizers of float16 parameters built on them.
from doppio.optimizer_precision import (  # noqa: F401
    FP16SgdOptimizer, MultiPrecisionAdamOptimizer, MultiPrecisionSgdOptimizer)
from doppio.optimizer_sgd_adam import AdamOptimizer, SgdOptimizer, _per_row_zeros  # noqa: F401


class WeightDecayBuilder(Optimizer):
    """L2 regularization: grad += weight_decay * param (dense gradients)."""

    def __init__(self, weight_decay):
        super(WeightDecayBuilder, self).__init__()
        self.weight_decay = weight_decay

    def _run(self, net, param_init_net, param_info):
        if isinstance(param_info.grad, core.GradientSlice):
            raise ValueError('Weight decay does not yet support sparse gradients '
                             '(parameter {})'.format(param_info.name))
        one, _ = _constant_on_device(param_init_net, 'ONE', 1.0)
        weight_decay, _ = _constant_on_device(param_init_net, 'wd', self.weight_decay)
        net.WeightedSum([param_info.grad, one, param_info.blob, weight_decay],
                        param_info.grad)


class AdagradOptimizer(Optimizer):
    """Adagrad (decayed sum of squared gradients) or SparseAdagrad."""

    def __init__(self, alpha=0.01, epsilon=1e-4, decay=1, weight_decay=0.0,
                 policy='fixed', sparse_dedup_aggregator=None, rowWise=False, engine='',
                 lars=None, output_effective_lr=False,
                 output_effective_lr_and_update=False, pruning_options=None,
                 swa_options=None, ema_options=None, weight_scale=None,
                 counter_halflife=-1, use_dedicated_lr_iteration_counter=False, **kwargs):
        super(AdagradOptimizer, self).__init__()
        unsupported = [('pruning_options', pruning_options, None, 'no masked Adagrad'),
                       ('swa_options', swa_options, None, 'no SWA operator'),
                       ('ema_options', ema_options, None, 'no EMA operator'),
                       ('weight_scale', weight_scale, None, 'no WeightScale operator'),
                       ('use_dedicated_lr_iteration_counter',
                        use_dedicated_lr_iteration_counter, False, 'one counter only')]
        for option, value, default, why in unsupported:
            if value != default:
                self._refuse(option, value, why)
        if counter_halflife > 0:
            self._refuse('counter_halflife', counter_halflife, 'no RowWiseCounter operator')
        self.alpha = alpha
        self.epsilon = epsilon
        self.decay = decay
        self.weight_decay = float(weight_decay)
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.rowWise = rowWise
        self.engine = engine
        self.lars = lars
        self.output_effective_lr = output_effective_lr
        self.output_effective_lr_and_update = output_effective_lr_and_update
        self.counter_halflife = counter_halflife
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param = param_info.blob
        grad = param_info.grad
        if not self._check_rate('alpha', self.alpha):
            return
        lr, _ = self.build_lr(net, param_init_net, base_learning_rate=self.alpha,
                              policy=self.policy,
                              param_multiplier=self._lars_multiplier(net, param, grad),
                              **self.init_kwargs)
        squared_sum = self._squared_sum(param_init_net, param, grad)
        self._aux_params.local.append(squared_sum)
        engine_kwargs = {'engine': self.engine} if self.engine else {}

        if isinstance(grad, core.GradientSlice):
            if self.weight_decay != 0:
                raise NotImplementedError(
                    'AdagradOptimizer: weight_decay with a sparse gradient (parameter {}) '
                    'is not supported'.format(param))
            if self.decay != 1:
                raise NotImplementedError(
                    'AdagradOptimizer: decay != 1 with a sparse gradient (parameter {}) '
                    'is not supported: SparseAdagrad has no decay'.format(param))
            grad = self.dedup(net, self.sparse_dedup_aggregator, grad)
            update = net.RowWiseSparseAdagrad if self.rowWise else net.SparseAdagrad
            update([param, squared_sum, grad.indices, grad.values, lr], [param, squared_sum],
                   epsilon=self.epsilon, **engine_kwargs)
            return

        if self.weight_decay != 0:
            # Caffe2's kernel adds weight_decay * param to the gradient; ours
            # does not, so the same sum is formed before it.
            one, _ = _constant_on_device(param_init_net, 'ONE', 1.0)
            decay_name = self.make_unique_blob_name('weight_decay')
            if param_init_net.BlobIsDefined(decay_name):
                decay_blob = core.BlobReference(decay_name, param_init_net)
            else:
                decay_blob = param_init_net.ConstantFill([], decay_name, shape=[1],
                                                         value=self.weight_decay)
            net.WeightedSum([grad, one, param, decay_blob], grad)
        outputs = [param, squared_sum]
        if self.output_effective_lr_and_update:
            outputs += [str(param) + '_effective_lr', str(param) + '_update']
        elif self.output_effective_lr:
            outputs.append(str(param) + '_effective_lr')
        net.Adagrad([param, squared_sum, grad, lr], outputs, epsilon=self.epsilon,
                    decay=float(self.decay), **engine_kwargs)

    def _squared_sum(self, param_init_net, param, grad):
        """The moment: one per element, or with rowWise (sparse gradients
        only, as in Caffe2) one per row of the parameter."""
        if not self.rowWise:
            return param_init_net.ConstantFill([param], str(param) + '_squared_sum', value=0.0)
        if not isinstance(grad, core.GradientSlice):
            raise NotImplementedError('AdagradOptimizer: rowWise is only supported for sparse '
                                      'gradients (parameter {})'.format(param))
        return _per_row_zeros(param_init_net, param, str(param) + '_avg_squared_sum')

    def scale_learning_rate(self, scale):
        self.alpha *= scale


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (Ftrl, or SparseFtrl for a sparse gradient); its state,
    `<param>_ftrl_nz`, holds (n, z) for every element."""

    def __init__(self, alpha=0.01, beta=1e-4, lambda1=0, lambda2=0,
                 sparse_dedup_aggregator=None, engine=''):
        super(FtrlOptimizer, self).__init__()
        self.alpha = alpha
        self.beta = beta
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.engine = engine

    def _run(self, net, param_init_net, param_info):
        param = param_info.blob
        grad = param_info.grad
        if not self._check_rate('alpha', self.alpha):
            return
        nz = param_init_net.ConstantFill([param], str(param) + '_ftrl_nz', extra_shape=[2],
                                         value=0.0)
        self._aux_params.local.append(nz)
        kwargs = dict(alpha=float(self.alpha), beta=float(self.beta),
                      lambda1=float(self.lambda1), lambda2=float(self.lambda2))
        if self.engine:
            kwargs['engine'] = self.engine
        if isinstance(grad, core.GradientSlice):
            grad = self.dedup(net, self.sparse_dedup_aggregator, grad)
            net.SparseFtrl([param, nz, grad.indices, grad.values], [param, nz], **kwargs)
        else:
            net.Ftrl([param, nz, grad], [param, nz], **kwargs)

    def scale_learning_rate(self, scale):
        self.alpha *= scale


class RmsPropOptimizer(Optimizer):
    """RMSProp: RmsProp turns the gradient into a momentum step, which
    MomentumSGDUpdate applies; dense gradients only (as in Caffe2)."""

    def __init__(self, alpha=0.01, decay=0.9, momentum=0.0, epsilon=1e-5, policy='fixed',
                 engine='', **kwargs):
        super(RmsPropOptimizer, self).__init__()
        self.alpha = alpha
        self.decay = decay
        self.momentum = momentum
        self.epsilon = epsilon
        self.policy = policy
        self.engine = engine
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param = param_info.blob
        grad = param_info.grad
        if not self._check_rate('alpha', self.alpha):
            return
        if isinstance(grad, core.GradientSlice):
            raise NotImplementedError('RmsPropOptimizer: parameter {} has a sparse gradient; '
                                      'RMSProp supports dense gradients only'.format(param))
        one, _ = _constant_on_device(param_init_net, 'ONE', 1.0)
        # MomentumSGDUpdate subtracts its lr: a positive step size.
        lr, _ = self.build_lr(net, param_init_net, base_learning_rate=-self.alpha,
                              policy=self.policy, **self.init_kwargs)
        step = param_init_net.ConstantFill([param], str(param) + '_grad_o', value=0.0)
        mean_squares = param_init_net.ConstantFill([param], str(param) + '_mean_squares',
                                                   value=0.0)
        momentum = param_init_net.ConstantFill([param], str(param) + '_momentum', value=0.0)
        self._aux_params.local.append(mean_squares)
        self._aux_params.local.append(momentum)
        engine_kwargs = {'engine': self.engine} if self.engine else {}
        net.RmsProp([grad, mean_squares, momentum, one], [step, mean_squares, momentum],
                    decay=float(self.decay), momentum=float(self.momentum),
                    epsilon=float(self.epsilon), **engine_kwargs)
        net.MomentumSGDUpdate([step, momentum, lr, param], [step, momentum, param])

    def scale_learning_rate(self, scale):
        self.alpha *= scale


class YellowFinOptimizer(Optimizer):
    """YellowFin (https://arxiv.org/abs/1706.03471): momentum SGD whose
    learning rate and momentum tune themselves (the YellowFin op); alpha and
    mu are their starting values. Dense gradients only, as in Caffe2."""

    # The scalar moving averages the YellowFin op keeps per parameter.
    SCALARS_MEMORY_SIZE = 5

    def __init__(self, alpha=0.1, mu=0.0, beta=0.999, curv_win_width=20, zero_debias=True,
                 epsilon=0.1 ** 6, policy='fixed', sparse_dedup_aggregator=None, **kwargs):
        super(YellowFinOptimizer, self).__init__()
        self.alpha = alpha
        self.mu = mu
        self.beta = beta
        self.curv_win_width = curv_win_width
        self.zero_debias = zero_debias
        self.epsilon = epsilon
        self.policy = policy
        self.sparse_dedup_aggregator = sparse_dedup_aggregator
        self.init_kwargs = kwargs

    def _run(self, net, param_init_net, param_info):
        param, grad = param_info.blob, param_info.grad
        if not self.alpha > 0:
            raise ValueError('YellowFinOptimizer: alpha must be positive, got {}'.format(
                self.alpha))
        if isinstance(grad, core.GradientSlice):
            raise NotImplementedError('YellowFinOptimizer: parameter {} has a sparse gradient; '
                                      'YellowFin supports dense gradients only'.format(param))

        def zeros_like_param(suffix):
            return param_init_net.ConstantFill([param], str(param) + suffix, value=0.0)

        def filled(suffix, size, value):
            return param_init_net.ConstantFill([], str(param) + suffix, shape=[size],
                                               value=float(value))

        moment = zeros_like_param('_moment')
        curv_win = filled('_curv_win', self.curv_win_width, 0.0)
        g_avg = zeros_like_param('_g_avg')
        g2_avg = zeros_like_param('_g2_avg')
        lr_avg = filled('_lr_avg', 1, self.alpha)
        mu_avg = filled('_mu_avg', 1, self.mu)
        scalars_memory = filled('_scalars_memory', self.SCALARS_MEMORY_SIZE, 0.0)
        iteration = BuildUniqueMutexIter(param_init_net, net)
        self._aux_params.shared.append(iteration)
        self._aux_params.local.extend(
            [moment, lr_avg, mu_avg, curv_win, g_avg, g2_avg, scalars_memory])
        state = [param, moment, lr_avg, mu_avg, curv_win, g_avg, g2_avg, scalars_memory]
        net.YellowFin(state + [grad, iteration], state, beta=float(self.beta),
                      curv_win_width=int(self.curv_win_width), epsilon=float(self.epsilon),
                      zero_debias=bool(self.zero_debias))

    def scale_learning_rate(self, scale):
        self.alpha *= scale


# ---- building for a whole model ----

def _infer_blob_devices(net):
    """blob name -> DeviceOption of the last op in `net` that writes it."""
    mapping = {}
    for op in net.Proto().op:
        device = op.device_option if op.HasField('device_option') else _cpu_device()
        for blob in op.output:
            mapping[blob] = device
    return mapping


def _get_param_to_device(model):
    param_to_device = _infer_blob_devices(model.net)
    param_to_device.update(_infer_blob_devices(model.param_init_net))
    return param_to_device


def get_param_device(param_name, grad, param_to_device=None, default_device=None):
    """The device of the op creating `param_name`, else of its gradient."""
    param_to_device = param_to_device or {}
    if param_name in param_to_device:
        return param_to_device[param_name]
    if isinstance(grad, core.GradientSlice):
        candidates = [str(grad.values), str(grad.indices)]
    else:
        candidates = [str(grad)]
    for name in candidates:
        if name in param_to_device:
            return param_to_device[name]
    if default_device is None:
        raise ValueError('Cannot infer device for {}: no op creates it'.format(param_name))
    return default_device


def get_lr_injection():
    """The current multiplier of every learning rate built with
    allow_lr_injection=True."""
    return workspace.FetchBlob(_LEARNING_RATE_INJECTION)


def set_lr_injection(lr_injection_value):
    workspace.FeedBlob(_LEARNING_RATE_INJECTION,
                       np.array([float(lr_injection_value)], dtype=np.float32))


def _calc_norm_ratio(model, params, name_scope, param_to_device, max_gradient_norm):
    """clip_norm / max(global gradient norm, clip_norm): 1 while the norm of
    all gradients together stays under max_gradient_norm."""
    with core.NameScope(name_scope):
        squared_sums = []
        for i, param in enumerate(params):
            device = get_param_device(str(param.blob), param.grad, param_to_device)
            with core.DeviceScope(device):
                grad = param.grad.values if isinstance(param.grad, core.GradientSlice) \
                    else param.grad
                squared_sums.append(
                    model.net.LpNorm(grad, 'grad_{}_squared_sum'.format(i), p=2))
        with core.DeviceScope(_cpu_device()):
            full_sum = model.net.Sum(squared_sums, 'grad_squared_full_sum')
            global_norm = model.net.Pow(full_sum, 'global_norm', exponent=0.5)
            clip_norm = model.param_init_net.ConstantFill(
                [], 'clip_norm', shape=[1], value=float(max_gradient_norm))
            max_norm = model.net.Max([global_norm, clip_norm], 'max_norm')
            return model.net.Div([clip_norm, max_norm], 'norm_ratio')


def _build(model, optimizer, weights_only=False, use_param_info_optim=True,
           max_gradient_norm=None, allow_lr_injection=False):
    """Runs `optimizer` on every parameter of `model` that has a gradient,
    each on its own device; returns the optimizer."""
    # A model with no parameters has nothing to update (Caffe2 builds
    # nothing); one with parameters needs its gradients first.
    if not getattr(model, 'gradient_ops_added', False) and model.GetParams():
        raise RuntimeError('model {}: run AddGradientOperators before building an '
                           'optimizer (no gradients yet)'.format(model.name))
    if max_gradient_norm is not None and not max_gradient_norm > 0:
        raise ValueError('max_gradient_norm must be > 0, got {}'.format(max_gradient_norm))
    param_to_device = _get_param_to_device(model)
    model.Validate()

    weights = set(str(w) for w in model.weights)
    params = [info for info in model.GetOptimizationParamInfo()
              if not weights_only or str(info.blob) in weights]

    lr_multiplier = None
    if max_gradient_norm is not None:
        lr_multiplier = _calc_norm_ratio(model, params, 'norm_clipped_grad_update',
                                         param_to_device, max_gradient_norm)
    if allow_lr_injection:
        if model.param_init_net.BlobIsDefined(_LEARNING_RATE_INJECTION):
            lr_injection = core.BlobReference(_LEARNING_RATE_INJECTION, model.param_init_net)
        else:
            lr_injection = model.param_init_net.ConstantFill(
                [], _LEARNING_RATE_INJECTION, shape=[1], value=1.0)
        if lr_multiplier is None:
            lr_multiplier = lr_injection
        else:
            lr_multiplier = model.net.Mul([lr_multiplier, lr_injection], 'lr_multiplier')
    optimizer.add_lr_multiplier(lr_multiplier)

    for param_info in params:
        device = get_param_device(str(param_info.blob), param_info.grad, param_to_device)
        with core.DeviceScope(device):
            if param_info.optimizer and use_param_info_optim:
                param_info.optimizer(model.net, model.param_init_net, param_info)
            else:
                optimizer(model.net, model.param_init_net, param_info)
    return optimizer


def add_weight_decay(model, weight_decay):
    """L2 regularization of the model's weights (not its biases): adds
    weight_decay * w to each weight's gradient. Call it before build_*."""
    _build(model, WeightDecayBuilder(weight_decay=weight_decay), weights_only=True,
           use_param_info_optim=False)


def build_sgd(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
              **kwargs):
    return _build(model, SgdOptimizer(base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_adagrad(model, base_learning_rate, parameters=None, max_gradient_norm=None,
                  allow_lr_injection=False, **kwargs):
    # `parameters` is accepted for Caffe2's signature; as there, every
    # parameter with a gradient is updated.
    return _build(model, AdagradOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_ftrl(model, engine='SIMD', **kwargs):
    # An engine Doppio lacks (Caffe2's default names its SIMD kernel) runs
    # the default kernel.
    return _build(model, FtrlOptimizer(engine=engine or '', **kwargs))


def build_rms_prop(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
                   **kwargs):
    return _build(model, RmsPropOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_yellowfin(model, base_learning_rate=0.1, **kwargs):
    return _build(model, YellowFinOptimizer(alpha=base_learning_rate, **kwargs))


def build_adam(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
               **kwargs):
    return _build(model, AdamOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_multi_precision_sgd(model, base_learning_rate, max_gradient_norm=None,
                              allow_lr_injection=False, **kwargs):
    return _build(model, MultiPrecisionSgdOptimizer(base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)


def build_fp16_sgd(model, base_learning_rate, **kwargs):
    return _build(model, FP16SgdOptimizer(base_learning_rate, **kwargs))


def build_multi_precision_adam(model, base_learning_rate, max_gradient_norm=None,
                               allow_lr_injection=False, **kwargs):
    return _build(model, MultiPrecisionAdamOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)
