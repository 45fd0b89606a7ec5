"""The device-type-specific parts of data_parallel_model: blob prefixes of
devices, whether a GPU model can run here, which device a blob lives on,
and how device 0's copy of a blob reaches the other devices (parallel/device_collectives.h is the C++
pass's counterpart)."""

from doppio import core
from doppio import workspace
from doppio.proto import doppio_pb2 as caffe2_pb2


def Prefix(device, model=None):
    """The blob prefix of `device` in a model parallelized (or being
    parallelized) onto `model`'s device type; CPU's without a model. The
    rule is the pass's (DevicePrefix, parallel/data_parallel.h)."""
    return workspace.C.device_prefix(getattr(model, '_device_type', caffe2_pb2.CPU), device)


def DevicePrefixOf(model, name):
    """The device prefix `name` starts with ('' for none), for `model`'s
    device type."""
    return workspace.C.device_prefix_of(model._device_type, str(name))


def CheckParallelized(model):
    if not hasattr(model, '_device_grouped_blobs'):
        raise ValueError('model {} was not parallelized: call Parallelize first'.format(
            model.name))


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


def DeviceOptionOfBlobs(model, blobs, what):
    """The one device all of `blobs` (full names) live on: CUDA <id> for
    "gpu_<id>/" names of a GPU model, else CPU. Blobs of several devices
    have no single placement."""
    if model._device_type != caffe2_pb2.CUDA:
        return core.DeviceOption(caffe2_pb2.CPU)
    device_of_prefix = {prefix: d for d, prefix in model._device_prefixes.items()}
    devices = set()
    for blob in blobs:
        prefix = workspace.C.device_prefix_of(caffe2_pb2.CUDA, blob)
        if prefix and prefix not in device_of_prefix:
            raise ValueError('{}: blob {!r} names a GPU that is not one of the model\'s '
                             'devices {}'.format(what, blob, sorted(model._device_prefixes)))
        devices.add(device_of_prefix.get(prefix))
    if len(devices) > 1:
        raise ValueError('{}: blobs {} live on different devices ({}); give the blobs of '
                         'one device per call'.format(
                             what, list(blobs), sorted(devices, key=lambda d: (d is None, d))))
    device = devices.pop()
    if device is None:
        return core.DeviceOption(caffe2_pb2.CPU)
    return core.DeviceOption(caffe2_pb2.CUDA, device)
