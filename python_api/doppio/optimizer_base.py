"""The base of every optimizer (doppio.optimizer): shared blob names, the
learning-rate builder, instance counting. Parameter updates, as in
caffe2.python.optimizer.

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

from doppio import core
from doppio import scope
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
                 policy='fixed', iter_val=0, param_multiplier=None, **kwargs):
        """The lr blob (base_lr = -base_learning_rate: descent) computed from
        the shared iteration counter by LearningRate with `policy` and its
        keywords (stepsize, gamma, power, ...), times any lr multiplier and,
        for one parameter's update, times `param_multiplier` (a one-element
        blob such as Lars's)."""
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
        if param_multiplier is not None:
            lr = net.Mul([lr, param_multiplier], str(param_multiplier) + '_scaled_lr')
        return lr, iteration

    def _lars_multiplier(self, net, param, grad):
        """Lars's factor for a dense parameter when lars (its offset) is set,
        else None (Caffe2 has no Lars for sparse gradients)."""
        lars = getattr(self, 'lars', None)
        if lars is None or isinstance(grad, core.GradientSlice):
            return None
        if lars < 0:
            raise ValueError('{}: the Lars offset must be >= 0, got {}'.format(
                type(self).__name__, lars))
        return net.Lars([param, grad], self.make_unique_blob_name(str(param) + '_lars'),
                        offset=float(lars))

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


