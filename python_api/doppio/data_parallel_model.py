"""Synchronous data-parallel training, as in caffe2.python.data_parallel_model.

The builders are called ONCE, on the (empty) model itself, with no name or
device scope; the C++ Parallelize pass (parallel/data_parallel.h) then
clones what they built onto every device under `cpu_<id>/`, adds the
gradient ops, one Allreduce per parameter gradient and the param update ops
per device, and ends the init net with Broadcasts of device 0's parameters.

Which blobs are shared (one copy, unprefixed) and which are per device:
  - shared: blobs made before Parallelize was called (a reader created
    outside the builders), and the optimizer's common state: the iteration
    counter `optimizer_iteration` and its `iteration_mutex`, the learning
    rate blobs (`<Optimizer>_<n>_lr_cpu`), `lr_injection`, the `ONE_*` /
    `wd_*` constants -- as long as every op making them reads only shared
    blobs. Ops writing them run once per step, so the counter advances once.
  - per device: everything else, parameters, gradients, momentum and other
    optimizer state (`<param>_momentum`), and the data blobs: feed
    `cpu_0/data`, `cpu_1/data` ... (each device reads different data).
A sparse gradient (GradientSlice, e.g. of a table read by Gather) is not
allreduced: each device concatenates every device's indices and values
(`cpu_<id>/<param>_grad_indices_all_devices`, `..._values_all_devices`) and
its sparse update op applies them all, so the replicas stay identical.
With shared_model=True (CPU only) the devices share the master's
(devices[0]'s) parameters: every device's ops read `cpu_<master>/<param>`,
no other device has a copy, gradients are still computed per device and
allreduced, and the update ops (and the optimizer state they keep) exist
only for the master; model.params and model.param_to_grad list the master's
alone, as Caffe2's _PruneParametersForSharing leaves them. Computed params
(batch-norm running statistics) stay per device.

Parallelize is all or nothing: the builders run on a copy of the model's
state, which replaces the model's only once the whole pass has succeeded,
so a failing call leaves the model as it was.
Parallelize_CPU replicates onto CPU devices (`cpu_<id>/`); Parallelize_GPU
(cpu_device=False) onto CUDA devices (`gpu_<id>/`, DeviceOption CUDA with
cuda_gpu_id <id>). On GPUs each gradient is summed by one NCCLAllreduce on
device 0 (use_nccl=True), or else by a tree of cross-device Copy + Sum ops
into device 0 followed by Copies back, and the init net gives every device
device 0's params with NCCLBroadcast (use_nccl=True) or Copies
(parallel/device_collectives.h). A sparse gradient on several GPUs is
gathered on device 0 (Copies of the other devices' slices, one Concat) and
copied to every device under the same `..._all_devices` names. Running such
a model needs a build with CUDA kernels and GPUs: RunInitNet / RunNet raise
RuntimeError otherwise. shared_model is CPU only, as in Caffe2.

Several processes ("shards") train one model when each passes a
`rendezvous` dict with Caffe2's keys: kv_handler (a store handler blob made
by a net the process ran before, e.g. FileStoreHandlerCreate or
RedisStoreHandlerCreate), shard_id, num_shards, engine ('GLOO', the only
one), transport ('tcp'), interface ('' binds the host name's address) and
exit_nets (accepted and ignored: a failed collective raises in RunNet
instead). Doppio adds timeout_ms (default 30000): the limit for the
rendezvous and for every cross-process send or receive, and bucket_cap_mb
(default 25, as PyTorch DDP): gradients cross the shards packed in buckets
of about that size (one AllreduceCoalesced each; the first bucket closes at
1 MiB so communication starts early in backward); 0 sends each gradient in
an Allreduce of its own, as Caffe2 does. Each process
parallelizes over its own devices; the loss scale counts every device of
every shard, the init net connects one common world and broadcasts shard
0's parameters to all shards, and each gradient is summed over the local
devices, then across shards, then copied back to the local devices
(parallel/distributed.h). On GPUs the local sum goes to device 0 alone
(NCCLReduce with use_nccl, else the Copy + Sum tree), the shards' Allreduce
and Broadcast run on device 0's CUDA tensor (engine GLOO), NCCLBroadcast or
Copies take the result to the other devices, and every gradient crosses
the shards alone (bucket_cap_mb applies to CPU devices only: no CUDA
AllreduceCoalesced yet). The cross-process collectives run one at a time,
in the same order in every shard. Sparse gradients across shards are not
implemented yet (NotImplementedError).
"""

import copy
import logging
import re

from doppio import core
from doppio import data_parallel_bmuf
from doppio import data_parallel_options
from doppio import data_parallel_precision
from doppio import data_parallel_shards
from doppio.data_parallel_checkpoint import (ExtractPredictorNet,  # noqa: F401
                                             FinalizeAfterCheckpoint, GetCheckpointParams)
from doppio.data_parallel_devices import Prefix as _Prefix
from doppio.data_parallel_options import ParallelizeArgumentError  # noqa: F401
from doppio.data_parallel_memory import (_AddDynamicMemoryOptimization,  # noqa: F401
                                          _OptimizeGradientMemorySimple)
from doppio.data_parallel_run import (DEFAULT_BARRIER_NET_TIMEOUT_SEC, AddBlobSync,  # noqa: F401
                                      AddDistributedBlobSync, CreateNet, GetDevices,
                                      GetLearningRateBlobNames, ModelNets,
                                      OptimizeGradientMemory, RunInitNet, RunNet, Synchronize)
# One block of a single-device model made data-parallel (PyTorch's
# DataParallel on a sub-module); see parallel_primitives.
from doppio.parallel_primitives import DataParallelBlock  # noqa: F401
from doppio.data_parallel_precision import LossScaleState  # noqa: F401
from doppio import scope
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2

log = logging.getLogger('data_parallel_model')

# Optimizer blobs common to all parameters (see doppio.optimizer).
_SHARED_OPTIMIZER_NAMES = frozenset(['optimizer_iteration', 'iteration_mutex', 'lr_injection'])
_SHARED_OPTIMIZER_PATTERNS = [
    re.compile(r'^\w+(Optimizer|Builder)_\d+_'),  # Optimizer.make_unique_blob_name
    re.compile(r'^(ONE|wd)_\d+_\d+'),  # optimizer._constant_on_device
]


def Parallelize_CPU(*args, **kwargs):
    kwargs['cpu_device'] = True
    return Parallelize(*args, **kwargs)


def Parallelize_GPU(*args, **kwargs):
    kwargs['cpu_device'] = False
    return Parallelize(*args, **kwargs)


def _refuse(option, value, why):
    raise NotImplementedError('Parallelize: {}={!r} is not supported yet: {}'.format(
        option, value, why))


def Parallelize(model_helper_obj, input_builder_fun, forward_pass_builder_fun,
                param_update_builder_fun=None, optimizer_builder_fun=None,
                post_sync_builder_fun=None, devices=None, rendezvous=None, net_type='dag',
                broadcast_computed_params=True, optimize_gradient_memory=False,
                dynamic_memory_management=False, blobs_to_keep=None, use_nccl=False,
                max_concurrent_distributed_ops=16, cpu_device=False, ideep=False,
                num_threads_per_device=4, shared_model=False, combine_spatial_bn=False,
                barrier_net_timeout_sec=DEFAULT_BARRIER_NET_TIMEOUT_SEC, accumulate_steps=1,
                shard_optimizer_state=False, precision='fp32', dynamic_loss_scale=None,
                init_loss_scale=65536.0, loss_scale_growth_interval=2000, _local_updates=False):
    """Replicates the model on `devices` for synchronous SGD (see the module
    doc). `param_update_builder_fun(model)` or `optimizer_builder_fun(model)`
    (at most one; neither: forward only) adds the updates; both see
    model.param_to_grad with the template's names. post_sync_builder_fun(
    model) runs once per device, in its device and name scope, after the
    init net has broadcast device 0's parameters: ops it adds to
    param_init_net see the synced values (Caffe2 refreshes float32 master
    copies of float16 parameters there). combine_spatial_bn=True
    makes training SpatialBN use the statistics of all devices' batches
    (ChannelStats / ChannelBackpropStats summed across devices), so N
    devices normalize like one device with the whole batch. shared_model=True
    (CPU only) makes every device use the master's parameters (module doc).
    optimize_gradient_memory=True runs memonger.share_grad_blobs per device
    (namescope cpu_N/ or gpu_N/) on the parallelized net, sparing the device's losses,
    param grads and blobs_to_keep; dynamic_memory_management=True adds Free
    ops after last use (memonger.release_blobs_when_used), sparing
    blobs_to_keep on every device (names without the device prefix).
    accumulate_steps=K (a Doppio addition) makes each RunNet read K
    micro-batches (the input and forward ops and the backward run K times:
    a reader such as a DB input op hands out K batches, and a batch fed
    with FeedBlob is cut into K parts of its rows, one per micro-step),
    sum their gradients locally and reduce and update once: one step of a
    batch K times larger. The loss scale the forward builder gets is divided
    by K for that. shard_optimizer_state=True (a Doppio addition; CPU
    devices, with a rendezvous of several shards) is ZeRO stage 1: the
    gradients are reduce-scattered, each shard keeps and updates only its
    block of every optimizer state blob (device 0's `<param>_momentum` holds
    a 1-D block) and the params are allgathered; the update ops must be
    elementwise (SGD, momentum, Adam, Adagrad, RmsProp, Ftrl, WeightedSum).
    Checkpoints then need every shard's blocks: distributed.Checkpointer
    saves and restores them at any process count. precision='bf16' or
    'fp16' (a Doppio addition; CPU devices) trains in mixed precision: the
    forward builder's net is rewritten before its backward is derived so
    that convolutions and matrix products run in the low type, softmax and
    losses in float32, and the params stay float32 master weights the
    optimizer updates (parallel/mixed_precision.h). dynamic_loss_scale
    (default: on for fp16) scales each loss's gradient by the replica's
    `loss_scale` blob (init_loss_scale), skips the updates of a step whose
    reduced gradients are not all finite (every replica and process skips
    the same steps), halves the scale then and doubles it after
    loss_scale_growth_interval good steps; LossScaleState(model) reads it.
    (_local_updates:
    Parallelize_BMUF's local steps, each device applying its own
    gradients.)"""
    model = model_helper_obj
    if scope.CurrentDeviceScope() is not None:
        raise ParallelizeArgumentError('Parallelize must be called without a device scope: '
                                       'it sets each replica\'s device itself')
    if param_update_builder_fun is not None and optimizer_builder_fun is not None:
        raise ValueError('Parallelize: give param_update_builder_fun or '
                         'optimizer_builder_fun, not both')
    if devices is None:
        devices = list(range(0, workspace.NumCudaDevices()))
    devices = list(devices)
    rendezvous = data_parallel_shards.CheckRendezvous(rendezvous)
    for option, value, why in [
            ('ideep', ideep, 'no IDEEP devices')]:
        if value:
            _refuse(option, value, why)
    # Every option's type here, its value by the pass's own checks, before
    # any builder runs.
    options = data_parallel_options.PassOptions(
        devices, cpu_device, use_nccl, net_type, broadcast_computed_params,
        num_threads_per_device, shared_model, combine_spatial_bn, rendezvous,
        accumulate_steps, _local_updates, shard_optimizer_state)
    data_parallel_options.SetPrecisionOptions(options, precision, dynamic_loss_scale,
                                              init_loss_scale, loss_scale_growth_interval)
    data_parallel_options.CheckCaffe2DistributedKnobs(max_concurrent_distributed_ops,
                                                      barrier_net_timeout_sec)
    workspace.C.validate_parallelize_options(options)
    if model.params:
        raise ValueError('Parallelize: the model must be empty (it has params {}); '
                         'build it inside the builder functions'.format(
                             [str(p) for p in model.params]))

    # Everything below works on a copy of the model's state; it replaces the
    # model's once nothing can fail any more.
    work = _WorkingCopy(model)
    _BuildParallel(work, input_builder_fun, forward_pass_builder_fun,
                   param_update_builder_fun, optimizer_builder_fun, options, rendezvous)
    if post_sync_builder_fun is not None:
        _BuildPerDevice(work, post_sync_builder_fun)
    if optimize_gradient_memory:
        _OptimizeGradientMemorySimple(work, work._losses_by_gpu, devices, blobs_to_keep)
    if dynamic_memory_management:
        _AddDynamicMemoryOptimization(work, blobs_to_keep, devices)
    _Commit(work, model)
    log.info('Parallelized model %s onto %s devices %s%s; %s', model.name,
             'CPU' if cpu_device else 'CUDA', devices,
             ' (shared model)' if shared_model else '', ExecutionPlan(model)['text'])
    return model


def ExecutionPlan(model):
    """How the training net's ops will run on this machine (a Doppio
    addition): {'devices': pool names, 'workers': per pool (a CPU device
    gets at most its share of the cores, whatever num_threads_per_device
    asks), 'requested_workers', 'intra_op_threads', 'runs_on_caller',
    'text': the same in words}. The dag executor works it out (C++)."""
    return workspace.C.dag_thread_plan(model.net.Proto().SerializeToString())


def _WorkingCopy(model):
    """A shallow copy of `model` whose nets and containers are deep copies
    (one memo, so blob references keep pointing at the copied nets)."""
    work = copy.copy(model)
    memo = {}
    for key, value in model.__dict__.items():
        if isinstance(value, (core.Net, list, dict, set)):
            try:
                work.__dict__[key] = copy.deepcopy(value, memo)
            except (TypeError, copy.Error):
                # Something a user stored that cannot be deep-copied (a
                # handle): a fresh container still keeps the model's intact.
                work.__dict__[key] = copy.copy(value)
    return work


def _Commit(work, model):
    """Moves the finished state of `work` onto `model`. Lists and dicts are
    updated in place: ModelHelper may share them with a param_model."""
    for key, value in work.__dict__.items():
        if key not in model.__dict__:
            model.__dict__[key] = value
            continue
        old = model.__dict__[key]
        if old is value:
            continue
        if type(old) is list and type(value) is list:
            old[:] = value
        elif type(old) is dict and type(value) is dict:
            old.clear()
            old.update(value)
        else:
            model.__dict__[key] = value


# True while the builders run on the template model, which the C++ pass
# later copies onto each device (ConvertNetForDevice then leaves nets as
# they are: the copy puts them on each device).
_building_template = False


def _BuildParallel(model, input_builder_fun, forward_pass_builder_fun,
                   param_update_builder_fun, optimizer_builder_fun, options, rendezvous):
    """The builders, the C++ pass and the bookkeeping, all on `model` (the
    working copy)."""
    devices = list(options.devices)
    model._device_type = options.device_type
    # Blobs made before the builders run are shared by all devices.
    pre_existing = set()
    for net in (model.param_init_net, model.net):
        for op in net.Proto().op:
            pre_existing.update(op.output)

    loss_scale = 1.0 / (max(1, len(devices)) * options.rendezvous.num_shards *
                        options.accumulate_steps)
    # Caffe2's builders see the devices (model._devices) while they run.
    model._devices = devices
    global _building_template
    _building_template = True
    try:
        input_builder_fun(model)
        losses = forward_pass_builder_fun(model, loss_scale)
    finally:
        _building_template = False
    has_update = param_update_builder_fun is not None or optimizer_builder_fun is not None
    if has_update:
        if isinstance(losses, core.BlobReference):
            losses = [losses]
        # An empty list is a model with nothing to train (Caffe2 accepts it:
        # its barrier tests build one); None is a builder that forgot to return.
        if not isinstance(losses, (list, tuple)) or not all(
                isinstance(loss, (core.BlobReference, str)) for loss in losses):
            raise ValueError('Parallelize: forward_pass_builder_fun must return a list of '
                             'loss blobs when an update is built, got {!r}'.format(losses))
    losses = [str(loss) for loss in (losses or [])] if has_update else []

    data_parallel_precision.LowerForwardNet(model, options.precision)
    num_forward = len(model.net.Proto().op)
    forward_proto = caffe2_pb2.NetDef()
    forward_proto.CopyFrom(model.net.Proto())
    optimizer = None
    request = workspace.C.ParallelizeRequest()
    update_proto = caffe2_pb2.NetDef(name=model.net.Name() + '_update')
    if has_update:
        # The template's backward, so the update builders can name the
        # gradients; the pass takes it as it is (backward runs once).
        if losses:
            model.AddGradientOperators(losses)
        gradient_ops = model.net.Proto().op[num_forward:]
        request.model.set_backward(
            [op.SerializeToString() for op in gradient_ops],
            {str(p): (str(g.indices), str(g.values)) if isinstance(g, core.GradientSlice)
             else str(g) for p, g in model.param_to_grad.items()})
        num_backward = len(gradient_ops)
        if optimizer_builder_fun is not None:
            optimizer = optimizer_builder_fun(model)
        else:
            param_update_builder_fun(model)
        update_proto.op.extend(model.net.Proto().op[num_forward + num_backward:])
    del forward_proto.op[num_forward:]

    template_init = model.param_init_net.Proto()
    shared = _SharedBlobs(pre_existing, [template_init, forward_proto, update_proto])
    params = [str(p) for p in model.params]
    computed = [str(p) for p in model._computed_params]
    weights = [str(p) for p in model.weights]
    biases = [str(p) for p in model.biases]
    request.model.param_init_net = template_init.SerializeToString()
    request.model.net = forward_proto.SerializeToString()
    request.model.param_update_net = update_proto.SerializeToString()
    request.model.losses = losses
    request.model.params = params
    request.model.computed_params = computed
    options.shared_blobs = sorted(shared)
    request.options = options
    result = workspace.C.parallelize(request)

    model.param_init_net = _NetFromBytes(result.param_init_net)
    model.net = _NetFromBytes(result.net)
    model._parallel_plan = result.plan
    model._schedule_shapes = result.schedule_shapes
    model._sharded_blobs = result.sharded_blobs
    model._shard_state_net = _NetFromBytes(result.shard_state_net)
    model._device_prefixes = dict(zip(devices, result.plan.prefixes))
    # Caffe2's attribute: the device kind of "<kind>_<id>/" ("cpu", "gpu"),
    # which scripts format into blob names themselves.
    model._device_prefix = result.plan.prefixes[0].rsplit('_', 1)[0] if devices else ''
    _RecordDeviceBlobs(model, devices, params, computed, result, shared, options.shared_model)
    # Caffe2 keeps the replicas' weights and biases (the master's alone for
    # a shared model).
    owners = devices[:1] if options.shared_model else devices
    model.weights[:] = [core.BlobReference(_Prefix(d, model) + w)
                        for d in owners for w in weights]
    model.biases[:] = [core.BlobReference(_Prefix(d, model) + b)
                       for d in owners for b in biases]
    model._losses_by_gpu = {d: [core.BlobReference(_Prefix(d, model) + l) for l in losses]
                            for d in devices}
    model._optimizer = optimizer
    model._net_type = options.net_type
    model._broadcast_computed_params = options.broadcast_computed_params
    model._rendezvous = rendezvous


def stripBlobName(param):
    """`param` without its first name scope ('gpu_0/fc_w' -> 'fc_w'); a
    GradientSlice as 'indices:values'."""
    if isinstance(param, core.GradientSlice):
        return stripBlobName(param.indices) + ':' + stripBlobName(param.values)
    name = str(param)
    return name[name.index(scope._NAMESCOPE_SEPARATOR) + 1:]


def _BuildPerDevice(model, builder_fun):
    """builder_fun(model) once per device, inside that device's scopes."""
    for device in model._devices:
        with core.DeviceScope(core.DeviceOption(model._device_type, device)):
            with core.NameScope(_Prefix(device, model).rstrip(scope._NAMESCOPE_SEPARATOR)):
                builder_fun(model)


def _SharedBlobs(pre_existing, nets):
    """Optimizer-common and pre-existing blobs whose makers read only
    shared blobs (iterated, since one blob's status depends on another's)."""
    makers = {}
    for net in nets:
        for op in net.op:
            for output in op.output:
                makers.setdefault(output, []).append(op)
    candidates = set(pre_existing)
    for name in makers:
        if name in _SHARED_OPTIMIZER_NAMES or any(p.match(name)
                                                  for p in _SHARED_OPTIMIZER_PATTERNS):
            candidates.add(name)
    changed = True
    while changed:
        changed = False
        for name in sorted(candidates):
            for op in makers.get(name, []):
                if not all(o in candidates for o in op.output) or \
                        not all(i in candidates for i in op.input):
                    candidates.discard(name)
                    changed = True
                    break
    return candidates


def _NetFromBytes(data):
    proto = caffe2_pb2.NetDef()
    proto.ParseFromString(data)
    name = proto.name
    net = core.Net(proto)
    # core.Net renames a proto whose name is taken; the replaced template
    # net held this name, so the result keeps it.
    net.Proto().name = name
    return net


def _RecordDeviceBlobs(model, devices, params, computed, result, shared, shared_model=False):
    """Caffe2's bookkeeping on the model from the pass's result: per-device
    blob groups, device-prefixed params and param_to_grad (a sparse param's
    entry names the slice its update ops read). With a shared model every
    device's entry of a param's group is the master's blob, and params and
    param_to_grad list the master's only."""
    param_to_grad = result.param_to_grad
    model._devices = devices
    model._shared_model = bool(shared_model)
    model._shared_blobs = set(shared)
    grouped = {}
    for name in params + computed + list(param_to_grad.values()):
        grouped[name] = {d: core.BlobReference(_Prefix(d, model) + name) for d in devices}
    if shared_model:
        for name in params:
            grouped[name] = {d: core.BlobReference(_Prefix(devices[0], model) + name)
                             for d in devices}
    model._device_grouped_blobs = grouped
    model._param_names = list(params)
    model._computed_param_names = list(computed)
    model._grad_names = [param_to_grad[p] for p in params if p in param_to_grad]
    owners = devices[:1] if shared_model else devices
    # Only reassign the list contents: ModelHelper may share them with a
    # param_model.
    model.params[:] = [grouped[p][d] for d in owners for p in params]
    model._computed_params[:] = [grouped[p][d] for d in devices for p in computed]
    model.param_to_grad = {grouped[p][d]: core.BlobReference(_Prefix(d, model) + g)
                           for d in owners for p, g in param_to_grad.items()}
    for param, (indices, values) in result.sparse_param_to_grad.items():
        for d in owners:
            model.param_to_grad[grouped[param][d]] = core.GradientSlice(
                core.BlobReference(_Prefix(d, model) + indices),
                core.BlobReference(_Prefix(d, model) + values))
    model.grad_map = {str(k): v for k, v in model.param_to_grad.items()}
    data_parallel_precision.RecordDeviceBlobCopies(
        model, params, {d: _Prefix(d, model) for d in owners}, grouped)


def ConvertNetForDevice(net, device=None):
    """A copy of `net` with every blob put under `device`'s prefix
    (`cpu_<id>/`) and every op on `device` (default: the current device
    scope), as Caffe2 does to append another model's net to a replica."""
    if device is None and _building_template:
        return copy.deepcopy(net)
    if device is None:
        device = scope.CurrentDeviceScope()
    if device is None:
        raise ValueError('ConvertNetForDevice: give a device or call it inside a '
                         'DeviceScope')
    if device.device_type != caffe2_pb2.CPU:
        raise RuntimeError('ConvertNetForDevice: only CPU devices are supported, got '
                           'device type {}'.format(device.device_type))
    namescope = _Prefix(device.cuda_gpu_id)
    converted = copy.deepcopy(net)
    proto = converted.Proto()
    for op in proto.op:
        if 'RecurrentNetwork' in op.type:
            raise NotImplementedError('ConvertNetForDevice: RecurrentNetwork ops are not '
                                      'supported')
        op.input[:] = [namescope + b for b in op.input]
        op.output[:] = [namescope + b for b in op.output]
        op.control_input[:] = [namescope + b for b in op.control_input]
        op.device_option.CopyFrom(device)
    proto.external_input[:] = [namescope + b for b in proto.external_input]
    proto.external_output[:] = [namescope + b for b in proto.external_output]
    return converted


def Parallelize_CPU_BMUF(*args, **kwargs):
    kwargs['cpu_device'] = True
    return Parallelize_BMUF(*args, **kwargs)


def Parallelize_GPU_BMUF(*args, **kwargs):
    kwargs['cpu_device'] = False
    return Parallelize_BMUF(*args, **kwargs)


def Parallelize_BMUF(model_helper_obj, input_builder_fun, forward_pass_builder_fun,
                     param_update_builder_fun, block_learning_rate=1.0, block_momentum=None,
                     devices=None, rendezvous=None, net_type='dag', master_device=None,
                     use_nccl=False, nesterov=False, optimize_gradient_memory=False,
                     reset_momentum_sgd=False, warmup_iterations=None,
                     max_concurrent_distributed_ops=4, add_blobs_to_sync=None,
                     num_threads_per_device=4, cpu_device=False,
                     barrier_net_timeout_sec=DEFAULT_BARRIER_NET_TIMEOUT_SEC):
    """Caffe2's block-wise model-update filtering (data_parallel_bmuf.py):
    every device trains alone for the iterations of one RunNet, then the
    block update averages the params over all devices and shards and
    filters the change with block_momentum (default 1 - 1 / devices of
    every shard). The loss scale is 1 / that count, as in Caffe2.
    master_device (default the first device) keeps the global model."""
    devices = list(range(workspace.NumCudaDevices()) if devices is None else devices)
    if not devices:
        raise ParallelizeArgumentError('Parallelize_BMUF: the device list is empty')
    if master_device is None:
        master_device = devices[0]
    if master_device not in devices:
        raise ParallelizeArgumentError(
            'Parallelize_BMUF: master_device {} is not one of the devices {}'.format(
                master_device, devices))
    # The pass broadcasts the first device's params: the master goes first.
    ordered = [master_device] + [d for d in devices if d != master_device]
    Parallelize(model_helper_obj, input_builder_fun, forward_pass_builder_fun,
                param_update_builder_fun=param_update_builder_fun, devices=ordered,
                rendezvous=rendezvous, net_type=net_type, use_nccl=use_nccl,
                optimize_gradient_memory=optimize_gradient_memory,
                num_threads_per_device=num_threads_per_device, cpu_device=cpu_device,
                barrier_net_timeout_sec=barrier_net_timeout_sec, _local_updates=True)
    data_parallel_bmuf.AddBlockNets(model_helper_obj, master_device, block_learning_rate,
                                    block_momentum, nesterov, reset_momentum_sgd,
                                    warmup_iterations, net_type, use_nccl)
    if add_blobs_to_sync is not None:
        AddBlobSync(model_helper_obj, add_blobs_to_sync,
                    net=model_helper_obj._global_model_param_updates_net)
    # The block update and warmup nets carry collectives across shards too.
    nets = [net for net, _ in ModelNets(model_helper_obj)]
    if getattr(model_helper_obj, '_warmup_broadcast', None) is not None:
        nets.append(model_helper_obj._warmup_broadcast)
    data_parallel_shards.RefreshScheduleCheck(model_helper_obj, nets)
    return model_helper_obj


RunWarmup = data_parallel_bmuf.RunWarmup
