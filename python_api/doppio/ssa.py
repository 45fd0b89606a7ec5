"""Caffe2's SSA view of a net (core.get_ssa and its helpers): which version of
each blob every op reads and writes. recurrent.recurrent_net uses it to find
what a backward step net needs from the forward one; scripts use it to
reason about nets they build."""
from doppio.proto import caffe2_pb2


def get_ssa(net, blob_versions=None):
    """(ssa, blob_versions) for a Net or NetDef (or a list of them): ssa has
    one (versioned inputs, versioned outputs) pair per op, each a list of
    (blob, version); blob_versions maps each blob to its last version. A
    blob's version rises by one at every write; external inputs (and, in a
    net that declares none, blobs read before any write) start at 0."""
    if blob_versions is None:
        blob_versions = {}
    if isinstance(net, list):
        return [get_ssa(n, blob_versions) for n in net], blob_versions
    # A core.Net by its interface: this module sits below core_net.
    proto = net.Proto() if hasattr(net, 'Proto') else net
    if not isinstance(proto, caffe2_pb2.NetDef):
        raise TypeError('get_ssa takes a Net or NetDef, not {}'.format(type(net).__name__))
    for name in proto.external_input:
        blob_versions.setdefault(str(name), 0)
    ssa = []
    for op in proto.op:
        if not proto.external_input:
            for name in op.input:
                blob_versions.setdefault(str(name), 0)
        inputs = [(str(i), blob_versions.get(str(i), 0)) for i in op.input]
        for name in op.output:
            blob_versions[str(name)] = blob_versions.get(str(name), 0) + 1
        outputs = [(str(o), blob_versions[str(o)]) for o in op.output]
        ssa.append((inputs, outputs))
    return ssa, blob_versions


def get_undefined_blobs(ssa):
    """Blobs some op reads before any op of the net writes them."""
    return {name for inputs, _ in ssa for name, version in inputs if version == 0}


def get_output_producers(ssa):
    """{(blob, version): index of the op writing that version}."""
    return {output: i for i, (_, outputs) in enumerate(ssa) for output in outputs}


def get_op_ids_in_path(ssa, blob_versions, inputs, outputs):
    """Sorted indices of the ops needed to compute `outputs` (their latest
    versions) from `inputs` (theirs)."""
    given = {(str(i), blob_versions[str(i)]) for i in inputs}
    producers = get_output_producers(ssa)
    queue = [(str(o), blob_versions[str(o)]) for o in outputs]
    used = set()
    while queue:
        blob = queue.pop()
        if blob in given or blob not in producers:
            continue
        op_id = producers[blob]
        if op_id in used:
            continue
        used.add(op_id)
        queue.extend(ssa[op_id][0])
    return sorted(used)
