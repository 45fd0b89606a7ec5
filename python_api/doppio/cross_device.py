"""Caffe2's InjectCrossDeviceCopies family over the C++ pass
(parallel/cross_device_copies.h); re-exported by doppio.core."""

from doppio import _C
from doppio.core_net import Net
from doppio.proto import doppio_pb2 as caffe2_pb2


class RemapEntry(object):
    """A key of blob_remap: the copy of `blob` that lives on `device`."""

    def __init__(self, blob, device):
        self.blob = str(blob)
        self.device = device

    def _key(self):
        return (self.blob, self.device.device_type, self.device.cuda_gpu_id)

    def __eq__(self, other):
        return isinstance(other, RemapEntry) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return 'RemapEntry({!r}, {}:{})'.format(self.blob, self.device.device_type,
                                              self.device.cuda_gpu_id)


def _device_from_bytes(data):
    device = caffe2_pb2.DeviceOption()
    device.ParseFromString(data)
    return device


def InjectCrossDeviceCopies(net, blob_to_device=None, blob_remap=None,
                            placeHolderOps=None):
    """Returns (new_net, blob_to_device): a copy of `net` with a Copy op
    (CopyCPUToGPU, CopyGPUToCPU or Copy) wherever an op reads a blob made on
    another device, one per (blob, device), and the device of every blob.

    blob_to_device: blob -> DeviceOption known beforehand (e.g. from the init
    net); updated in place. blob_remap: RemapEntry(blob, device) -> copy name,
    copies made by earlier nets; updated in place. placeHolderOps: op types
    that take their inputs wherever they are."""
    proto = net.Proto() if isinstance(net, Net) else net
    if blob_to_device is None:
        blob_to_device = {}
    if blob_remap is None:
        blob_remap = {}
    rows = [(key.blob, key.device.SerializeToString(), str(name))
            for key, name in blob_remap.items()]
    net_bytes, devices, remap = _C.inject_cross_device_copies(
        proto.SerializeToString(),
        {str(b): d.SerializeToString() for b, d in blob_to_device.items()},
        rows, list(placeHolderOps or []))
    blob_to_device.clear()
    blob_to_device.update({b: _device_from_bytes(d) for b, d in devices.items()})
    blob_remap.clear()
    for blob, device, name in remap:
        blob_remap[RemapEntry(blob, _device_from_bytes(device))] = name
    new_proto = caffe2_pb2.NetDef()
    new_proto.ParseFromString(net_bytes)
    return Net(new_proto), blob_to_device


def InjectDeviceCopiesAmongNets(nets, blob_to_device_init=None):
    """Injects copies into `nets`, given in execution order (e.g. [init,
    train]), resolving blobs one net makes and a later one reads. Returns
    (new_nets, blob_to_device)."""
    assert isinstance(nets, list), 'nets {} should be a list of nets.'.format(nets)
    blob_to_device = blob_to_device_init or {}
    blob_remap = {}
    new_nets = []
    for net in nets:
        new_net, blob_to_device = InjectCrossDeviceCopies(
            net, blob_to_device=blob_to_device, blob_remap=blob_remap)
        new_nets.append(new_net)
    return new_nets, blob_to_device


def InjectDeviceCopiesAmongNetsWithoutB2D(nets, blob_to_device_init=None):
    return InjectDeviceCopiesAmongNets(nets, blob_to_device_init)[0]
