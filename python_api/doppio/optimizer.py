"""Parameter updates, as in caffe2.python.optimizer.

`build_sgd(model, 0.1, momentum=0.9)` appends to model.net, for every
parameter with a gradient, the learning-rate computation and the update op,
and to model.param_init_net the state they need (iteration counter, momentum,
squared sums ...), under Caffe2's blob names so checkpoints and scripts that
look blobs up by name keep working:

  optimizer_iteration, iteration_mutex     shared int64 counter (CPU)
  <Class>_<n>_lr_cpu                        lr of optimizer instance n
  ONE_<device_type>_<device_id>             constant 1 per device
  <param>_momentum, <param>_squared_sum,    per-parameter state
  <param>_first_moment, <param>_second_moment

The learning rate blob holds the signed step: Caffe2 makes it negative for
ops that add it (WeightedSum, Adagrad, Adam) and positive for
MomentumSGDUpdate, which subtracts.
"""

import collections
import math

import numpy as np

from doppio import core
from doppio import scope
from doppio import workspace
from doppio.model_helper import ParameterInfo
from doppio.proto import doppio_pb2 as caffe2_pb2

_OPTIMIZER_ITERATION_NAME = 'optimizer_iteration'
_ITERATION_MUTEX_NAME = 'iteration_mutex'
_LEARNING_RATE_INJECTION = 'lr_injection'

AuxOptimizerParams = collections.namedtuple('AuxOptimizerParams', ['local', 'shared'])

# Per optimizer class, how many instances exist: the instance number goes
# into the lr blob name, so two optimizers in one net get two lr blobs.
_optimizer_instance_count = collections.defaultdict(int)

# The policies operators/learning_rate_op.cc implements. Checked here too so
# a typo fails while the model is built, naming the optimizer, not later
# inside CreateNet.
LEARNING_RATE_POLICIES = frozenset([
    'fixed', 'step', 'multistep', 'exp', 'inv', 'poly', 'linearWarmup',
    'constantWarmup', 'alter', 'hill', 'cosine', 'composite'])

_GPU_DEVICE_TYPES = frozenset([caffe2_pb2.CUDA])


def reset_optimizer_instance_count():
    """Starts blob numbering from 0 again (e.g. after ResetWorkspace)."""
    _optimizer_instance_count.clear()


def _cpu_device():
    return core.DeviceOption(caffe2_pb2.CPU)


def BuildUniqueMutexIter(init_net, net, iter=None, iter_mutex=None, iter_val=0):
    """The shared iteration counter: created once (int64, on CPU, with the
    mutex AtomicIter locks) and incremented at the start of each run of
    `net`; later calls return the existing blob."""
    iter_name = iter if iter is not None else _OPTIMIZER_ITERATION_NAME
    mutex_name = iter_mutex if iter_mutex is not None else _ITERATION_MUTEX_NAME
    if init_net.BlobIsDefined(iter_name):
        return core.BlobReference(iter_name, init_net)
    with core.DeviceScope(_cpu_device()):
        iteration = init_net.ConstantFill([], iter_name, shape=[1], value=int(iter_val),
                                          dtype=core.DataType.INT64)
        mutex = init_net.CreateMutex([], [mutex_name])
        net.AtomicIter([mutex, iteration], [iteration])
    return iteration


def _constant_on_device(param_init_net, prefix, value):
    """A one-element float blob `<prefix>_<device_type>_<device_id><node>`
    for the current device, filled once."""
    dev = scope.CurrentDeviceScope() or _cpu_device()
    name = '{}_{}_{}{}'.format(prefix, dev.device_type, dev.cuda_gpu_id, dev.node_name)
    if param_init_net.BlobIsDefined(name):
        return core.BlobReference(name, param_init_net), False
    return param_init_net.ConstantFill([], name, shape=[1], value=float(value)), True


class Optimizer(object):
    """Adds the update of one parameter per call:
    `opt(net, param_init_net, param_info)` or
    `opt(net, param_init_net, param, grad)`."""

    def __init__(self):
        self._aux_params = AuxOptimizerParams(local=[], shared=[])
        class_name = type(self).__name__
        self._instance_num = _optimizer_instance_count[class_name]
        _optimizer_instance_count[class_name] += 1
        self._lr_multiplier = None

    def __call__(self, net, param_init_net, param, grad=None):
        if grad is None:
            if not isinstance(param, ParameterInfo):
                raise TypeError('{}: expected a ParameterInfo (or a param and its grad), '
                                'got {!r}'.format(type(self).__name__, param))
            if param.grad is None:
                raise ValueError('{}: parameter {} has no gradient; run '
                                 'AddGradientOperators first'.format(
                                     type(self).__name__, param.name))
        else:
            if isinstance(param, str):
                param = core.BlobReference(param)
            param = ParameterInfo(param_id=None, param=param, grad=grad)
        self._run(net, param_init_net, param)

    def _run(self, net, param_init_net, param_info):
        raise NotImplementedError('{} does not implement _run'.format(type(self).__name__))

    # ---- blob names ----

    def get_cpu_blob_name(self, base_str, node_name=''):
        return '%s_%d_%s%s_cpu' % (type(self).__name__, self._instance_num, base_str,
                                   node_name)

    def get_gpu_blob_name(self, base_str, gpu_id, node_name):
        return '%s_%d_%s%s_gpu%d' % (type(self).__name__, self._instance_num, base_str,
                                     node_name, gpu_id)

    def make_unique_blob_name(self, base_str):
        """A name unique to this optimizer instance and the current device."""
        current = scope.CurrentDeviceScope()
        if current is None:
            return self.get_cpu_blob_name(base_str)
        if current.device_type in _GPU_DEVICE_TYPES:
            return self.get_gpu_blob_name(base_str, current.cuda_gpu_id, current.node_name)
        return self.get_cpu_blob_name(base_str, current.node_name)

    @property
    def attributes(self):
        attr = dict(self.__dict__)
        attr.pop('_instance_num', None)
        return attr

    # ---- learning rate ----

    def build_lr(self, net, param_init_net, base_learning_rate, learning_rate_blob=None,
                 policy='fixed', iter_val=0, **kwargs):
        """The lr blob (base_lr = -base_learning_rate: descent) computed from
        the shared iteration counter by LearningRate with `policy` and its
        keywords (stepsize, gamma, power, ...), times any lr multiplier."""
        if policy not in LEARNING_RATE_POLICIES:
            raise ValueError('{}: unknown learning rate policy {!r}; known: {}'.format(
                type(self).__name__, policy, ', '.join(sorted(LEARNING_RATE_POLICIES))))
        if not math.isfinite(float(base_learning_rate)):
            raise ValueError('{}: learning rate must be finite, got {}'.format(
                type(self).__name__, base_learning_rate))
        if learning_rate_blob is None:
            learning_rate_blob = self.make_unique_blob_name('lr')
        iteration = BuildUniqueMutexIter(param_init_net, net, iter_val=iter_val)
        if net.BlobIsDefined(learning_rate_blob):
            lr = core.BlobReference(learning_rate_blob, net)
        else:
            lr = net.LearningRate([iteration], learning_rate_blob,
                                  base_lr=-float(base_learning_rate), policy=policy, **kwargs)
        if self._lr_multiplier is not None:
            scaled_name = self.make_unique_blob_name('scaled_lr')
            if net.BlobIsDefined(scaled_name):
                lr = core.BlobReference(scaled_name, net)
            else:
                lr = net.Mul([lr, self._lr_multiplier], scaled_name)
        return lr, iteration

    def add_lr_multiplier(self, lr_multiplier):
        """Scales every later lr by the one-element blob `lr_multiplier`
        (None: no scaling)."""
        self._lr_multiplier = lr_multiplier

    @staticmethod
    def dedup(net, sparse_dedup_aggregator, grad):
        if not isinstance(grad, core.GradientSlice):
            raise TypeError('dedup only works on a sparse gradient, got {}'.format(grad))
        if sparse_dedup_aggregator:
            # The update ops below accumulate repeated indices, so only an
            # explicit aggregator needs this op, which Doppio lacks.
            raise NotImplementedError(
                'sparse_dedup_aggregator={!r} needs DeduplicateGradientSlices, which '
                'Doppio does not provide; leave it None (repeated indices are '
                'accumulated)'.format(sparse_dedup_aggregator))
        return grad

    def get_auxiliary_parameters(self):
        """AuxOptimizerParams(local, shared): per-parameter state (momentum,
        squared sums ...) and state shared by all parameters (ONE, the
        iteration counter)."""
        return self._aux_params

    def _add_shared(self, blob):
        if all(str(b) != str(blob) for b in self._aux_params.shared):
            self._aux_params.shared.append(blob)

    def scale_learning_rate(self, *args, **kwargs):
        raise NotImplementedError('{} does not implement scale_learning_rate'.format(
            type(self).__name__))

    def _check_rate(self, name, value):
        """0 disables the optimizer (Caffe2's behaviour); below 0 is an error."""
        if value < 0:
            raise ValueError('{}: {} must be >= 0, got {}'.format(
                type(self).__name__, name, value))
        return value > 0

    @staticmethod
    def _refuse(option, value, why):
        raise NotImplementedError('{}={!r} is not supported: {}'.format(option, value, why))


class SgdOptimizer(Optimizer):
    """Plain SGD (WeightedSum) or, with momentum > 0, MomentumSGDUpdate
    (Nesterov unless nesterov=False); sparse gradients update only their
    rows."""

    def __init__(self, base_learning_rate=0.01, policy='fixed', momentum=0.0,
                 nesterov=True, sparse_dedup_aggregator=None, lars=None, **kwargs):
        super(SgdOptimizer, self).__init__()
        if lars is not None:
            self._refuse('lars', lars, 'Doppio has no Lars operator')
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
                              policy=self.policy, **self.init_kwargs)
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
        unsupported = [('rowWise', rowWise, False, 'no RowWiseSparseAdagrad operator'),
                       ('lars', lars, None, 'no Lars operator'),
                       ('pruning_options', pruning_options, None, 'no masked Adagrad'),
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
                              policy=self.policy, **self.init_kwargs)
        squared_sum = param_init_net.ConstantFill([param], str(param) + '_squared_sum',
                                                  value=0.0)
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
            net.SparseAdagrad([param, squared_sum, grad.indices, grad.values, lr],
                              [param, squared_sum], epsilon=self.epsilon, **engine_kwargs)
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

    def scale_learning_rate(self, scale):
        self.alpha *= scale


class AdamOptimizer(Optimizer):
    """Adam with Caffe2's bias correction; dense gradients only."""

    def __init__(self, alpha=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 policy='fixed', use_lr_adaption=False, lr_alpha=0.01,
                 normalized_lr_adaption=True, sparse_dedup_aggregator=None,
                 rowWise=False, engine='', enableRAdam=False, use_smart_decay=False,
                 **kwargs):
        super(AdamOptimizer, self).__init__()
        for option, value, why in [
                ('use_lr_adaption', use_lr_adaption, 'no LearningRateAdaption operator'),
                ('rowWise', rowWise, 'no RowWiseSparseAdam operator'),
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
        if isinstance(grad, core.GradientSlice):
            raise NotImplementedError(
                'AdamOptimizer: parameter {} has a sparse gradient (GradientSlice), and '
                'Doppio has no SparseAdam operator yet; use AdagradOptimizer or '
                'SgdOptimizer for it'.format(param))
        lr, iteration = self.build_lr(net, param_init_net, base_learning_rate=self.alpha,
                                      policy=self.policy, **self.init_kwargs)
        first_moment = param_init_net.ConstantFill(
            [param], str(param) + '_first_moment', value=0.0)
        second_moment = param_init_net.ConstantFill(
            [param], str(param) + '_second_moment', value=0.0)
        self._add_shared(iteration)
        self._aux_params.local.append(first_moment)
        self._aux_params.local.append(second_moment)
        engine_kwargs = {'engine': self.engine} if self.engine else {}
        net.Adam([param, first_moment, second_moment, grad, lr, iteration],
                 [param, first_moment, second_moment],
                 beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, **engine_kwargs)

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
    if not getattr(model, 'gradient_ops_added', False):
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


def build_adam(model, base_learning_rate, max_gradient_norm=None, allow_lr_injection=False,
               **kwargs):
    return _build(model, AdamOptimizer(alpha=base_learning_rate, **kwargs),
                  max_gradient_norm=max_gradient_norm, allow_lr_injection=allow_lr_injection)
