"""The device-type-specific parts of data_parallel_model: what GPU models
cannot do yet, whether a GPU model can run here, and how device 0's copy of
a blob reaches the other devices (parallel/device_collectives.h is the C++
pass's counterpart)."""

from doppio import core
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2


def RefuseOnGpus(rendezvous, optimize_gradient_memory, dynamic_memory_management):
    """The options Parallelize_GPU does not handle yet (the C++ pass refuses
    the rendezvous too); checked before anything is built."""
    for option, value, why in [
            ('rendezvous', rendezvous and rendezvous['num_shards'] > 1,
             'the Gloo collectives across processes run on CPU devices only'),
            ('optimize_gradient_memory', optimize_gradient_memory,
             'the memonger steps handle cpu_N/ replicas only'),
            ('dynamic_memory_management', dynamic_memory_management,
             'the memonger steps handle cpu_N/ replicas only')]:
        if value:
            raise NotImplementedError(
                'Parallelize: {}={!r} is not supported yet with GPU devices: {}'.format(
                    option, value, why))


def CheckDevicesPresent(model, what):
    """A GPU model needs CUDA kernels and its GPUs; without them the first
    op would fail with a less direct message."""
    if model._device_type != caffe2_pb2.CUDA:
        return
    have = workspace.NumCudaDevices()
    missing = [d for d in model._devices if d >= have]
    if missing:
        raise RuntimeError(
            '{}: model {} was parallelized onto CUDA devices {}, but this process sees {} '
            'CUDA device(s){}; run it on a machine with those GPUs and a build with CUDA '
            'kernels, or parallelize with Parallelize_CPU'.format(
                what, model.name, model._devices, have,
                ' (a build without CUDA, or no GPU visible)' if have == 0 else ''))


def AddBroadcast(model, net, group):
    """Device 0's copy (group[0]) into the others: the in-process Broadcast
    on CPU; on GPUs one Copy per other device, on the receiving device, as
    Caffe2's _Broadcast does."""
    devices = model._devices
    if model._device_type != caffe2_pb2.CUDA:
        root = core.DeviceOption(model._device_type, devices[0])
        net.Broadcast(group, group, root=0, device_option=root)
        return
    for device, blob in zip(devices[1:], group[1:]):
        net.Copy(group[0], blob, device_option=core.DeviceOption(caffe2_pb2.CUDA, device))
