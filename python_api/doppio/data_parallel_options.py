"""Parallelize's options on their way to the C++ pass: values of the wrong
type are refused here, by option name, as ParallelizeArgumentError (a
ValueError); the values themselves are checked by the pass
(ValidateParallelizeOptions, parallel/data_parallel_planning.cc), which
raises doppio.errors.InvalidArgumentError, also a ValueError, naming the
option too."""
import numpy as np

from doppio import data_parallel_shards
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2


class ParallelizeArgumentError(ValueError, AssertionError):
    """A bad argument to Parallelize: a ValueError, and an AssertionError as
    Caffe2's asserts raised."""


def Integer(option, value):
    """`value` as an int, or a ParallelizeArgumentError naming `option` (a
    float with a fraction, a string, None, a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if not (isinstance(value, (float, np.floating)) and float(value).is_integer()):
            raise ParallelizeArgumentError(
                'Parallelize: {} must be an integer, got {!r}'.format(option, value))
    return int(value)


def Number(option, value):
    """`value` as a float, or a ParallelizeArgumentError naming `option`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParallelizeArgumentError(
            'Parallelize: {} must be a number, got {!r}'.format(option, value))
    return float(value)


def String(option, value):
    if not isinstance(value, str):
        raise ParallelizeArgumentError(
            'Parallelize: {} must be a str, got {!r}'.format(option, value))
    return value


def PassOptions(devices, cpu_device, use_nccl, net_type, broadcast_computed_params,
                num_threads_per_device, shared_model, combine_spatial_bn, rendezvous,
                accumulate_steps=1, local_updates=False, shard_optimizer_state=False):
    """The C++ pass's ParallelizeOptions (parallel/data_parallel.h) for a
    rendezvous dict data_parallel_shards.CheckRendezvous returned; the
    shared blobs are filled in once the builders have run."""
    options = workspace.C.ParallelizeOptions()
    options.devices = [Integer('devices', d) for d in devices]
    options.device_type = caffe2_pb2.CPU if cpu_device else caffe2_pb2.CUDA
    options.use_nccl = bool(use_nccl)
    options.net_type = String('net_type', net_type)
    options.broadcast_computed_params = bool(broadcast_computed_params)
    options.num_threads_per_device = Integer('num_threads_per_device', num_threads_per_device)
    options.shared_model = bool(shared_model)
    options.combine_spatial_bn = bool(combine_spatial_bn)
    options.rendezvous = data_parallel_shards.RendezvousOptions(rendezvous)
    options.accumulate_steps = Integer('accumulate_steps', accumulate_steps)
    options.local_updates = bool(local_updates)
    options.shard_optimizer_state = bool(shard_optimizer_state)
    return options


def SetPrecisionOptions(options, precision, dynamic_loss_scale, init_loss_scale,
                        loss_scale_growth_interval):
    """Mixed precision and loss scaling (parallel/mixed_precision.h)."""
    options.precision = String('precision', precision)
    if dynamic_loss_scale is not None and not isinstance(dynamic_loss_scale, bool):
        raise ParallelizeArgumentError(
            'Parallelize: dynamic_loss_scale must be None, True or False, got {!r}'.format(
                dynamic_loss_scale))
    options.dynamic_loss_scale = dynamic_loss_scale
    options.init_loss_scale = Number('init_loss_scale', init_loss_scale)
    options.loss_scale_growth_interval = Integer('loss_scale_growth_interval',
                                                 loss_scale_growth_interval)


def CheckCaffe2DistributedKnobs(max_concurrent_distributed_ops, barrier_net_timeout_sec):
    """Caffe2's knobs of its distributed ops, checked. Doppio's collectives
    run in the order of a schedule the ranks agree on, with no cap on how
    many are in flight, and its barrier waits as long as the rendezvous's
    timeout_ms (data_parallel_run.Synchronize), so neither value changes
    what runs."""
    if Integer('max_concurrent_distributed_ops', max_concurrent_distributed_ops) < 1:
        raise ParallelizeArgumentError(
            'Parallelize: max_concurrent_distributed_ops must be >= 1, got {!r}'.format(
                max_concurrent_distributed_ops))
    if Number('barrier_net_timeout_sec', barrier_net_timeout_sec) <= 0:
        raise ParallelizeArgumentError(
            'Parallelize: barrier_net_timeout_sec must be positive, got {!r}'.format(
                barrier_net_timeout_sec))
