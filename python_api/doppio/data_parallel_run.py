"""What a parallelized model runs and adds after Parallelize, as in
caffe2.python.data_parallel_model (which re-exports all of it): creating
and running its nets, a barrier across shards, blob syncs, the memonger
pass and the learning-rate blobs."""
from doppio import core
from doppio import data_parallel_devices
from doppio import data_parallel_shards
from doppio import workspace
from doppio.data_parallel_devices import CheckParallelized as _CheckParallelized
from doppio.data_parallel_devices import DevicePrefixOf as _DevicePrefixOf
from doppio.data_parallel_devices import Prefix as _Prefix
from doppio.data_parallel_memory import _OptimizeGradientMemorySimple

DEFAULT_BARRIER_NET_TIMEOUT_SEC = 300


def GetDevices(model):
    _CheckParallelized(model)
    return model._devices


def ModelNets(model):
    """(net, runs per RunNet call; None: num_iterations) in run order: the
    net alone, or Parallelize_BMUF's net and its block update."""
    return getattr(model, '_data_parallel_model_nets', None) or [(model.net, None)]


def CreateNet(model, overwrite=False):
    """Creates the model's nets (Parallelize_BMUF's block update too)."""
    _CheckParallelized(model)
    for net, _ in ModelNets(model):
        workspace.CreateNet(net, overwrite=overwrite,
                            input_blobs=list(net.Proto().external_input))


def RunInitNet(model):
    """Runs the init nets (device 0's params broadcast; Parallelize_BMUF's
    global model too) and creates the nets; inputs not fed yet (each
    device's data) start empty, as in Caffe2."""
    _CheckParallelized(model)
    data_parallel_devices.CheckDevicesPresent(model, 'RunInitNet')
    for init_net in getattr(model, '_data_parallel_model_init_nets', None) or [
            model.param_init_net]:
        workspace.RunNetOnce(init_net)
    CreateNet(model, overwrite=True)


def RunNet(model, num_iterations):
    """Runs the net num_iterations times; a Parallelize_BMUF model then runs
    its block update once."""
    _CheckParallelized(model)
    data_parallel_devices.CheckDevicesPresent(model, 'RunNet')
    for net, runs in ModelNets(model):
        workspace.RunNet(net.Proto().name, num_iterations if runs is None else runs)


def Synchronize(model, timeout_sec=DEFAULT_BARRIER_NET_TIMEOUT_SEC):
    """Caffe2's barrier across the shards of a multi-process run: returns
    once every shard has called it. Every device of one process lives in it
    and each RunNet returns only when all of them are done, so, as in
    Caffe2, a single process needs nothing. Unlike Caffe2, the barrier uses
    the model's common world (RunInitNet must have run), so its limit is
    the rendezvous's timeout_ms; timeout_sec is only checked."""
    _CheckParallelized(model)
    if timeout_sec <= 0:
        raise ValueError('Synchronize: timeout_sec must be positive, got {!r}'.format(
            timeout_sec))
    data_parallel_shards.Barrier(model)


def AddDistributedBlobSync(model, blobs):
    """As in Caffe2: appends to model.net an Allreduce (a sum) of `blobs`
    (full names, synced as given: across shards, not across devices) over
    the shards; nothing for a single process. Call it before RunInitNet,
    which creates the net."""
    _CheckParallelized(model)
    data_parallel_shards.AllreduceAcrossShards(model, blobs)
    data_parallel_shards.RefreshScheduleCheck(model, [net for net, _ in ModelNets(model)])


def AddBlobSync(model, blobs, net=None):
    """Appends to `net` (default model.net) a Broadcast of device 0's copy of
    each (unprefixed) blob to every device, and records the blobs as
    per-device groups. Call it before RunInitNet, which creates the net."""
    _CheckParallelized(model)
    blobs = [str(b) for b in blobs]
    if not blobs:
        return
    net = model.net if net is None else net
    for name in blobs:
        if _DevicePrefixOf(model, name):
            raise ValueError('AddBlobSync: give the unprefixed blob name, not {!r}'.format(
                name))
        if name in model._shared_blobs:
            raise ValueError('AddBlobSync: {!r} is shared by all devices (one copy); '
                             'there is nothing to sync'.format(name))
    devices = model._devices
    for name in blobs:
        group = [_Prefix(d, model) + name for d in devices]
        model._device_grouped_blobs[name] = {d: core.BlobReference(_Prefix(d, model) + name)
                                             for d in devices}
        if len(devices) > 1:
            data_parallel_devices.AddBroadcast(model, net, group)


def OptimizeGradientMemory(model, input_shapes, excluded_blobs, recycle_activations):
    """Caffe2's memonger pass for a parallelized model, run after
    Parallelize: gradient blobs (and, with recycle_activations, forward
    activations) of each device share memory once dead. excluded_blobs
    (unprefixed) keep their own memory on every device; so do the losses
    and the parameters' gradients. input_shapes (unprefixed name -> shape)
    is accepted for Caffe2's signature; the assignment here does not need
    shapes."""
    _CheckParallelized(model)
    _OptimizeGradientMemorySimple(model, model._losses_by_gpu, model._devices,
                                  blobs_to_keep=excluded_blobs,
                                  share_activations=recycle_activations)


def GetLearningRateBlobNames(model):
    """The learning rate blobs the optimizer reads: the optimizer's shared
    `<Optimizer>_<n>_lr_cpu` when Parallelize built one, else the outputs of
    the net's LearningRate ops."""
    _CheckParallelized(model)
    if model._optimizer is not None:
        return [model._optimizer.get_cpu_blob_name('lr')]
    names = []
    for op in model.net.Proto().op:
        if op.type == 'LearningRate' and op.output[0] not in names:
            names.append(op.output[0])
    return names
