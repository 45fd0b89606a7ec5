"""Caffe2's muji: allreduce across the GPUs of one process written as ordinary
ops in a net (Add on one device, Copy to the others), no collective library.

Detectron's optimizer and older Caffe2 scripts import it; Doppio's own
data_parallel_model reduces with NCCL or Gloo ops instead.

Allreduce(net, blobs, reduced_affix, gpu_indices) adds, to `net`, ops that
leave the sum of `blobs` (one per GPU, blobs[i] on gpu_indices[i]) in
`blob + reduced_affix` on every GPU and returns those references. Two, four
and eight GPUs reduce as a tree of pairs (each Add reads one blob from a peer
GPU, as Caffe2's peer-access layouts assume) and broadcast back down the same
tree; other counts reduce flat on the first GPU (AllreduceFallback). The sum
is the same value on every GPU: one device computes it, the others copy it.
"""
from doppio.proto import doppio_pb2 as caffe2_pb2


def OnGPU(gpu_id):
    """A DeviceOption for CUDA device `gpu_id`."""
    option = caffe2_pb2.DeviceOption()
    option.device_type = caffe2_pb2.CUDA
    option.cuda_gpu_id = gpu_id
    return option


def OnCPU():
    option = caffe2_pb2.DeviceOption()
    option.device_type = caffe2_pb2.CPU
    return option


def Allreduce(net, blobs, reduced_affix='_reduced', gpu_indices=None):
    """See the module doc. Returns one reference per GPU, in `blobs` order."""
    if gpu_indices is None:
        gpu_indices = list(range(len(blobs)))
    if len(gpu_indices) != len(blobs):
        raise RuntimeError('gpu_indices length and blobs length mismatch: {} vs {}'.format(
            len(gpu_indices), len(blobs)))
    if len(blobs) in (2, 4, 8):
        return _tree_allreduce(net, blobs, reduced_affix, gpu_indices)
    return AllreduceFallback(net, blobs, reduced_affix, gpu_indices)


def Allreduce2(net, blobs, reduced_affix, gpu_indices):
    return _tree_allreduce(net, blobs, reduced_affix, gpu_indices)


def Allreduce4(net, blobs, reduced_affix, gpu_indices):
    return _tree_allreduce(net, blobs, reduced_affix, gpu_indices)


def Allreduce8(net, blobs, reduced_affix, gpu_indices):
    return _tree_allreduce(net, blobs, reduced_affix, gpu_indices)


def _tree_allreduce(net, blobs, reduced_affix, gpu_indices):
    """Pairs at distance 1, 2, 4, ... add into the lower index; the total then
    travels back down the same pairs. The step that joins the two groups of
    four (distance 4) first copies the peer's partial sum over, as Caffe2
    does, since peer access there was not assumed."""
    count = len(blobs)
    reduced = [None] * count
    for i in range(0, count, 2):
        reduced[i] = net.Add([blobs[i], blobs[i + 1]], str(blobs[i]) + reduced_affix,
                             device_option=OnGPU(gpu_indices[i]))
    distance = 2
    while distance < count:
        for i in range(0, count, 2 * distance):
            peer = reduced[i + distance]
            if distance == 4:
                peer = peer.Copy([], str(peer) + '_copy', device_option=OnGPU(gpu_indices[i]))
            reduced[i] = reduced[i].Add(peer, reduced[i], device_option=OnGPU(gpu_indices[i]))
        distance *= 2
    while distance > 1:
        distance //= 2
        for i in range(0, count, 2 * distance):
            target = i + distance
            name = reduced[target] if reduced[target] is not None else (
                str(blobs[target]) + reduced_affix)
            reduced[target] = reduced[i].Copy([], name,
                                              device_option=OnGPU(gpu_indices[target]))
    return reduced


def AllreduceFallback(net, blobs, reduced_affix, gpu_indices):
    """Any number of GPUs: the first copies each blob over and adds it, then
    copies the total back to every other GPU."""
    first = OnGPU(gpu_indices[0])
    total = net.Copy(blobs[0], str(blobs[0]) + reduced_affix, device_option=first)
    staging = str(total) + '_temp_copy'
    for blob in blobs[1:]:
        copied = net.Copy(blob, staging, device_option=first)
        total = total.Add(copied, total, device_option=first)
    reduced = [total]
    for blob, gpu in zip(blobs[1:], gpu_indices[1:]):
        reduced.append(net.Copy(total, str(blob) + reduced_affix, device_option=OnGPU(gpu)))
    return reduced
