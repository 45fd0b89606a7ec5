"""The multi-process side of doppio.data_parallel_model: Caffe2's
rendezvous dict, parsed and passed to the C++ pass (which checks it) (parallel/distributed.h),
and the collectives across shards that Synchronize and
AddDistributedBlobSync run over the model's common world."""

from doppio import core
from doppio import data_parallel_devices
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2

_RENDEZVOUS_KEYS = frozenset(['kv_handler', 'shard_id', 'num_shards', 'engine', 'transport',
                              'interface', 'exit_nets', 'timeout_ms', 'bucket_cap_mb'])


def CheckRendezvous(rendezvous):
    """Caffe2's rendezvous dict with its defaults filled in, or None for a
    single process (no dict, or num_shards <= 1, as in Caffe2)."""
    if rendezvous is None:
        return None
    if not isinstance(rendezvous, dict):
        raise TypeError('Parallelize: rendezvous must be a dict, got {!r}'.format(rendezvous))
    unknown = sorted(set(rendezvous) - _RENDEZVOUS_KEYS)
    if unknown:
        raise ValueError('Parallelize: unknown rendezvous keys {}; known: {}'.format(
            unknown, sorted(_RENDEZVOUS_KEYS)))
    if 'num_shards' not in rendezvous:
        raise ValueError('Parallelize: rendezvous needs num_shards')
    if _Converted(rendezvous, 'num_shards', int) <= 1:
        return None
    for key in ('kv_handler', 'shard_id'):
        if rendezvous.get(key) is None:
            raise ValueError('Parallelize: rendezvous needs {} when num_shards > 1'.format(key))
    result = dict(engine='GLOO', transport='tcp', interface='', exit_nets=None,
                  timeout_ms=30000, bucket_cap_mb=25)
    result.update(rendezvous)
    result['kv_handler'] = str(result['kv_handler'])
    for key, kind in (('num_shards', int), ('shard_id', int), ('timeout_ms', int),
                      ('bucket_cap_mb', float)):
        result[key] = _Converted(result, key, kind)
    result['interface'] = result['interface'] or ''
    # The pass's default name for the world it connects.
    result['common_world'] = workspace.C.RendezvousOptions().common_world
    return result


def _Converted(rendezvous, key, kind):
    """rendezvous[key] as `kind` (int or float), or a ValueError naming it."""
    try:
        return kind(rendezvous[key])
    except (TypeError, ValueError):
        raise ValueError('Parallelize: rendezvous {} must be {}, got {!r}'.format(
            key, 'an integer' if kind is int else 'a number', rendezvous[key])) from None


def RendezvousOptions(rendezvous):
    """The pass's RendezvousOptions (parallel/distributed.h) for a dict
    CheckRendezvous returned (None: a single process). The pass checks the
    values (engine, transport, shard id, bucket size)."""
    options = workspace.C.RendezvousOptions()
    if not rendezvous:
        return options
    for key in ('kv_handler', 'shard_id', 'num_shards', 'engine', 'transport', 'interface',
                'timeout_ms', 'common_world', 'bucket_cap_mb'):
        setattr(options, key, rendezvous[key])
    return options


def IsDistributed(model):
    return bool(getattr(model, '_rendezvous', None))


def Barrier(model):
    """Returns once every shard has entered it (one net, created once)."""
    if not IsDistributed(model):
        return
    if getattr(model, '_barrier_net', None) is None:
        net = core.Net('data_parallel_model_barrier_net')
        net.Barrier([model._rendezvous['common_world']], [],
                    engine=model._rendezvous['engine'],
                    device_option=core.DeviceOption(caffe2_pb2.CPU))
        workspace.CreateNet(net, overwrite=True)
        model._barrier_net = net
    workspace.RunNet(model._barrier_net.Proto().name)


def RefreshScheduleCheck(model, nets):
    """The init net's collective schedule check (the pass put it after
    CreateCommonWorld) made to cover `nets` too, in the order they run: a
    collective added after the pass would otherwise be left out of the
    comparison. The C++ side derives the schedule."""
    if not IsDistributed(model):
        return
    init = model.param_init_net.Proto()
    data = workspace.C.insert_schedule_check(
        init.SerializeToString(), [net.Proto().SerializeToString() for net in nets],
        model._rendezvous['common_world'], model._schedule_shapes)
    checked = caffe2_pb2.NetDef()
    checked.ParseFromString(data)
    del init.op[:]
    init.op.extend(checked.op)


def AllreduceAcrossShards(model, blobs, net=None):
    """Appends to `net` (default model.net) a Gloo Allreduce of `blobs`,
    after the net's other cross-process collectives; on the blobs' GPU for
    "gpu_<id>/" blobs of a GPU model (the CUDA Gloo kernel), else on the
    CPU."""
    _AppendCollective(model, 'Allreduce', blobs, net, 'AddDistributedBlobSync')


def BroadcastAcrossShards(model, blobs, net):
    """Appends to `net` a Gloo Broadcast of shard 0's first blob into every
    one of `blobs` on every shard."""
    _AppendCollective(model, 'Broadcast', blobs, net, 'BroadcastAcrossShards', root=0)


def _AppendCollective(model, op_type, blobs, net, what, **kwargs):
    if not IsDistributed(model):
        return
    blobs = [str(b) for b in blobs]
    if not blobs:
        return
    net = model.net if net is None else net
    device_option = data_parallel_devices.DeviceOptionOfBlobs(model, blobs, what)
    proto = net.Proto()
    # After the net's other cross-process collectives: one common world
    # carries one collective at a time (parallel/distributed.h).
    previous = [op.output[0] for op in proto.op
                if op.engine == model._rendezvous['engine'] and op.output]
    getattr(net, op_type)([model._rendezvous['common_world']] + blobs, blobs,
                          engine=model._rendezvous['engine'], device_option=device_option,
                          **kwargs)
    if previous:
        proto.op[-1].control_input.append(previous[-1])
