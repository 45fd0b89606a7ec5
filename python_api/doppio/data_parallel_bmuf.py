"""Caffe2's Parallelize_BMUF: block-wise model-update filtering (Chen and
Huo, "Scalable Training of Deep Learning Machines by Incremental Block
Training with Intra-block Parallel Optimization and Blockwise Model-Update
Filtering", ICASSP 2016).

Every device trains its own copy of the model (the C++ pass with
local_updates: no gradient is reduced) for a block of iterations; then the
block update averages the params over every device of every shard and
filters the change with a block momentum, on the master device:

    delta = block_learning_rate * (average - global)
    v     = block_momentum * v + delta
    global = global + v                      (Nesterov: global + v
                                               - block_momentum * (v - v_prev))
    every device's param = global

The nets, as Caffe2 names them: model.net (the local steps),
model._global_model_init_net (v = 0, global = the initial params),
model._global_model_param_updates_net (the block update), and with
warmup_iterations model._warmup_broadcast, which RunWarmup runs after
warmup_iterations local steps. data_parallel_model.RunNet(model, n) runs
n local steps, then the block update once. data_parallel_model's
Parallelize_BMUF takes Caffe2's arguments and calls AddBlockNets."""

from doppio import core
from doppio import data_parallel_devices
from doppio import data_parallel_shards
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2


def _v(param):
    return '{}_v'.format(param)


def _g(param):
    return '{}_g'.format(param)


def _v_prev(param):
    return '{}_prev'.format(param)


def AddBlockNets(model, master_device, block_learning_rate, block_momentum, nesterov,
                 reset_momentum_sgd, warmup_iterations, net_type, use_nccl):
    """Adds the BMUF nets (module doc) to `model`, which the pass has made
    with local updates, its master device first. block_momentum None:
    1 - 1 / (devices of every shard), Caffe2's default."""
    num_shards = model._rendezvous['num_shards'] if model._rendezvous else 1
    num_devices = len(model._devices) * num_shards
    if block_momentum is None:
        block_momentum = 1.0 - 1.0 / num_devices
    master = core.DeviceOption(model._device_type, master_device)
    names = list(model._param_names)

    def master_blob(name):
        return str(model._device_grouped_blobs[name][master_device])

    init = core.Net('global_model_init')
    update = core.Net('global_model')
    for net in (init, update):
        net.Proto().type = net_type
    for name in names:
        param = master_blob(name)
        init.ConstantFill(param, _v(param), value=0.0, device_option=master)
        init.Copy(param, _g(param), device_option=master)
        if nesterov:
            init.ConstantFill(param, _v_prev(param), value=0.0, device_option=master)

    _AddParamSums(model, update, names, master_device, use_nccl)
    for name in names:
        _AddBlockUpdate(update, master_blob(name), master, num_devices, block_learning_rate,
                        block_momentum, nesterov)
    _AddMasterBroadcasts(model, update, names, master_device, across_shards=False)
    if reset_momentum_sgd:
        for op in model.net.Proto().op:
            if op.type == 'MomentumSGDUpdate':
                update.ConstantFill([op.input[1]], op.input[1], value=0.0,
                                    device_option=op.device_option)

    if warmup_iterations is not None:
        model._warmup_iterations = int(warmup_iterations)
        warmup = core.Net('warmup-broadcast')
        warmup.Proto().type = net_type
        _AddMasterBroadcasts(model, warmup, names, master_device, across_shards=True)
        for name in names:
            warmup.Copy(master_blob(name), _g(master_blob(name)), device_option=master)
        model._warmup_broadcast = warmup

    model._global_model_init_net = init
    model._global_model_param_updates_net = update
    model._data_parallel_model_init_nets = [model.param_init_net, init]
    model._data_parallel_model_nets = [(model.net, None), (update, 1)]


def _AddParamSums(model, net, names, master_device, use_nccl):
    """Each param summed over the devices into the master's copy, by the
    pass's own in-process reductions (the Allreduce on CPU, NCCLReduce or
    the Copy + Sum tree on GPUs: workspace.C.device_reduce_to_first; the
    master is the first device), then across the shards (Gloo, one
    collective per param: a Gloo Allreduce sums all its inputs into one)."""
    if len(model._devices) > 1:
        sums = caffe2_pb2.NetDef()
        sums.ParseFromString(workspace.C.device_reduce_to_first(
            model._device_type, model._devices, bool(use_nccl), names))
        net.AppendNet(core.Net(sums))
    for name in names:
        data_parallel_shards.AllreduceAcrossShards(
            model, [str(model._device_grouped_blobs[name][master_device])], net=net)


def _AddBlockUpdate(net, param, master, num_devices, block_learning_rate, block_momentum,
                    nesterov):
    """The filtered update of one param on the master, as Caffe2 writes it:
    `param` holds the sum over all devices on entry and the new global
    model on exit."""
    net.Scale(param, param, scale=1.0 / num_devices, device_option=master)
    net.Sub([param, _g(param)], param, device_option=master)
    net.Scale(param, param, scale=block_learning_rate, device_option=master)
    net.Scale(_v(param), _v(param), scale=block_momentum, device_option=master)
    net.Add([_v(param), param], _v(param), device_option=master)
    net.Add([_g(param), _v(param)], _g(param), device_option=master)
    if nesterov:
        net.Sub([_v(param), _v_prev(param)], _v_prev(param), device_option=master)
        net.Scale(_v_prev(param), _v_prev(param), scale=block_momentum, device_option=master)
        net.Sub([_g(param), _v_prev(param)], _g(param), device_option=master)
        net.Copy(_v(param), _v_prev(param), device_option=master)
    net.Copy(_g(param), param, device_option=master)


def _AddMasterBroadcasts(model, net, names, master_device, across_shards):
    """The master's params to every device; first shard 0's to every shard
    when `across_shards` (after the block update every shard computed the
    same global model, so it needs none)."""
    for name in names if across_shards else []:
        data_parallel_shards.BroadcastAcrossShards(
            model, [str(model._device_grouped_blobs[name][master_device])], net=net)
    if len(model._devices) < 2:
        return
    for name in names:
        data_parallel_devices.AddBroadcast(
            model, net, [str(model._device_grouped_blobs[name][d]) for d in model._devices])


def RunWarmup(model):
    """Caffe2's: warmup_iterations local steps, then every device (and
    shard) takes the master's params, which become the global model."""
    if getattr(model, '_warmup_broadcast', None) is None:
        raise ValueError('RunWarmup: model {} was not built by Parallelize_BMUF with '
                         'warmup_iterations'.format(model.name))
    workspace.RunNet(model.net.Proto().name, model._warmup_iterations)
    workspace.RunNetOnce(model._warmup_broadcast)
