"""data_parallel_model's checkpoint and export helpers, as Caffe2 names
them: which blobs of a parallelized model a checkpoint holds (device 0's
and the shared iteration counters), how a loaded checkpoint reaches every
device, and the predictor net of device 0's replica. data_parallel_model
re-exports them."""

from doppio import core
from doppio import data_parallel_devices
from doppio import workspace
from doppio.data_parallel_devices import CheckParallelized, DevicePrefixOf, Prefix
from doppio.proto import doppio_pb2 as caffe2_pb2


def GetCheckpointParams(model):
    """Device 0's blobs made by the init net (params, computed params,
    optimizer state such as momentum) plus the shared iteration counters."""
    CheckParallelized(model)
    prefix = Prefix(model._devices[0], model)
    blobs = set()
    for op in model.param_init_net.Proto().op:
        for output in op.output:
            if output.startswith(prefix):
                blobs.add(core.BlobReference(output))
    for op in _OpsWithNested(model.net.Proto()):
        if op.type in ('Iter', 'AtomicIter') and not DevicePrefixOf(model, op.output[0]):
            blobs.add(core.BlobReference(op.output[0]))
    return blobs


def _OpsWithNested(net):
    """The net's ops and those of the nets its ops carry (the updates a loss
    scale guards run inside an If)."""
    for op in net.op:
        yield op
        for arg in op.arg:
            if arg.HasField('n'):
                yield from _OpsWithNested(arg.n)
            for nested in arg.nets:
                yield from _OpsWithNested(nested)


def _StripDevicePrefix(model, name):
    name = str(name)
    return name[len(DevicePrefixOf(model, name)):]


def FinalizeAfterCheckpoint(model, blobs=None, cpu_mode=False):
    """After loading a checkpoint into device 0 (or the initial params),
    copies device 0's blobs to every other device. Shared blobs (the
    iteration counter) exist once and need nothing."""
    CheckParallelized(model)
    if blobs is None:
        blobs = GetCheckpointParams(model)
    names = sorted(set(_StripDevicePrefix(model, b) for b in blobs
                       if DevicePrefixOf(model, b)))
    devices = model._devices
    if model._shared_model or getattr(model, '_sharded_blobs', None):
        # The params of a shared model, and optimizer state only the
        # master's updates keep (or only its blocks, when sharded), exist
        # once: only blobs every device has are copied.
        referenced = set()
        for net in (model.param_init_net, model.net):
            for op in net.Proto().op:
                referenced.update(op.input)
                referenced.update(op.output)
        names = [n for n in names if n not in model._param_names and
                 all(Prefix(d, model) + n in referenced for d in devices)]
    key = tuple(names)
    if getattr(model, '_checkpoint_net_key', None) != key:
        net = core.Net('checkpoint_sync_net')
        if len(devices) > 1:
            for name in names:
                data_parallel_devices.AddBroadcast(model, net, [Prefix(d, model) + name for d in devices])
        model._checkpoint_net = net
        model._checkpoint_net_key = key
        workspace.CreateNet(net, overwrite=True)
    workspace.RunNet(model._checkpoint_net.Proto().name)


def ExtractPredictorNet(model, inputs, outputs, device):
    """(predict net, blobs to export) from device 0's replica, as in Caffe2:
    `inputs` and `outputs` are unprefixed and appear so in the result; the
    params keep device 0's names (`cpu_0/fc_w`), which the export list
    gives. Extract from a test-mode model (is_test=1)."""
    from doppio import model_helper
    CheckParallelized(model)
    master = Prefix(model._devices[0], model)
    prefixed_inputs = [master + str(b) for b in inputs]
    prefixed_outputs = [master + str(b) for b in outputs]
    # The replicas' ops are interleaved; only device 0's (and shared ones)
    # may enter the predictor.
    device0 = caffe2_pb2.NetDef()
    device0.CopyFrom(model.net.Proto())
    del device0.op[:]
    for op in model.net.Proto().op:
        names = list(op.input) + list(op.output)
        if all(n.startswith(master) or not DevicePrefixOf(model, n) for n in names):
            device0.op.add().CopyFrom(op)
    device0.external_input[:] = [b for b in model.net.Proto().external_input
                                 if b.startswith(master) or not DevicePrefixOf(model, b)]
    device0.external_output[:] = [b for b in model.net.Proto().external_output
                                  if b.startswith(master) or not DevicePrefixOf(model, b)]
    renames = dict(zip(prefixed_inputs + prefixed_outputs,
                       [str(b) for b in inputs] + [str(b) for b in outputs]))
    return model_helper.ExtractPredictorNet(
        net_proto=device0, input_blobs=prefixed_inputs, output_blobs=prefixed_outputs,
        device=device, renames=renames)
