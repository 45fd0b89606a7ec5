"""Memory optimization passes, as in caffe2.python.memonger.

The passes rename blobs so that blobs whose lifetimes cannot overlap share
one name (one allocation). Unlike Caffe2's, the liveness analysis runs over
the dag executor's dependency graph (read-after-write, write-after-read,
write-after-write and control_input edges, core/net_dag.h): a blob takes
over another's name only when every op touching the first is an ancestor of
the second's first writer, so no schedule the executor may choose (any
topological order, several workers per device) can have both alive.
Parameters, parameter gradients, losses, external inputs/outputs, blobs
outside the namescope and dont_share_blobs are never renamed. Shared blobs
are called "{namescope}__m{N}_shared". Every pass returns a NEW NetDef; the
input is never modified. The passes themselves are C++
(parallel/memonger/, reached through doppio._C).
"""

import collections
import enum
import logging

import numpy as np

from doppio import _C as C
from doppio.proto import doppio_pb2 as caffe2_pb2

log = logging.getLogger('memonger')

LiveRange = collections.namedtuple('LiveRange', ['defined', 'used', 'size'])
Statistics = collections.namedtuple('Statistics', ['baseline_nbytes', 'optimized_nbytes'])
Optimization = collections.namedtuple('Optimization', ['net', 'assignments', 'blob_assignments'])


class AssignmentAlgorithm(enum.Enum):
    GREEDY = 0
    DYNAMIC_PROGRAMMING = 1


def _proto(net):
    """A NetDef from a core.Net or a NetDef."""
    if isinstance(net, caffe2_pb2.NetDef):
        return net
    if hasattr(net, 'Proto'):
        return net.Proto()
    raise TypeError('memonger: expected a core.Net or a NetDef, got {!r}'.format(type(net)))


def _from_bytes(data):
    proto = caffe2_pb2.NetDef()
    proto.ParseFromString(data)
    return proto


def _names(blobs):
    return sorted({str(b) for b in (blobs or [])})


def _shapes(blob_shapes):
    if blob_shapes is None:
        return None
    result = {}
    for name, shape in blob_shapes.items():
        try:
            result[str(name)] = [int(d) for d in shape]
        except (TypeError, ValueError):
            raise ValueError('memonger: blob_shapes gives blob {!r} the shape {!r}; a shape '
                             'must be a list of ints'.format(str(name), shape))
    return result


def _checked(original, optimized):
    if not verify_graph_equality(original, optimized):
        raise RuntimeError('Memonger graph is not equal to original.')
    if not verify_inplace_blobs(original, optimized):
        raise RuntimeError('Inplace assignments differ in memonger net.')
    return optimized


def share_grad_blobs(net, losses, param_grads, namescope, dont_share_blobs=None,
                     share_activations=False, blob_shapes=None):
    """Recycles the gradients passed between layers (Torch's shareGradInput)
    and, with share_activations, every other blob the net makes inside the
    namescope (forward activations included). blob_shapes (name -> shape)
    makes the assignment size aware. Returns the optimized NetDef (assign it
    to net._net).

    Deviation from Caffe2: its share_activations offers only brew layers'
    outputs (ops reading "<output>_w"), all but the last two, because its
    liveness over one linear op order cannot tell which activations the
    backward pass still reads. Here liveness runs over the dag executor's
    dependency graph, so an activation stays alive until its last reader,
    backward's included, in every schedule; activations backward never reads
    (Sum inputs, a Relu's input when its gradient reads the output) are
    recycled as soon as forward is done with them. Protected as before:
    param_grads, losses, dont_share_blobs, external inputs/outputs, blobs
    read before written (params, optimizer and BN state) and blobs outside
    the namescope, and, as in Caffe2, the forward head: the outputs of every
    forward op from the second-to-last brew layer on (the last layers'
    activations, softmax, loss), which scripts fetch after a step."""
    proto = _proto(net)
    optimized = _from_bytes(C.memonger_share_grad_blobs(
        proto.SerializeToString(), _names(losses), _names(param_grads), str(namescope),
        _names(dont_share_blobs), bool(share_activations), _shapes(blob_shapes)))
    return _checked(proto, optimized)


def optimize_inference_for_dag(net, input_blobs, namescope=''):
    """Recycles the activations of an inference-only net."""
    proto = _proto(net)
    optimized = _from_bytes(C.memonger_optimize_inference_for_dag(
        proto.SerializeToString(), _names(input_blobs), str(namescope)))
    return _checked(proto, optimized)


def release_blobs_when_used(netproto, dont_free_blobs, selector_fun=None):
    """Inserts a Free op after each blob's last use, for blobs the net makes
    (not external outputs, not inputs of Alias, not in dont_free_blobs, and,
    with selector_fun, only those it returns True for). Returns a new NetDef."""
    proto = _proto(netproto)
    keep = set(_names(dont_free_blobs))
    if selector_fun is not None:
        for op in proto.op:
            keep.update(b for b in op.output if not selector_fun(b))
    return _from_bytes(C.memonger_release_blobs_when_used(
        proto.SerializeToString(), sorted(keep)))


def verify_graph_equality(net_a, net_b):
    """True when both nets have the same ops (type, engine, device) and each
    input is made by the same op in both."""
    return C.memonger_verify_graph_equality(_proto(net_a).SerializeToString(),
                                            _proto(net_b).SerializeToString())


def verify_inplace_blobs(net_a, net_b):
    """True when the rewrite made no op in place that was not before (and
    undid none)."""
    return C.memonger_verify_inplace_blobs(_proto(net_a).SerializeToString(),
                                           _proto(net_b).SerializeToString())


def compute_ranges(linearized_ops, blob_sizes=None):
    """blob -> LiveRange(first op writing it, last op reading it, size)."""
    ranges = collections.defaultdict(lambda: LiveRange(defined=None, used=None, size=None))
    for i, op in enumerate(linearized_ops):
        for blob in op.input:
            used = ranges[blob].used
            ranges[blob] = ranges[blob]._replace(
                used=i if used is None else max(used, i),
                size=blob_sizes.get(blob) if blob_sizes else None)
        for blob in op.output:
            defined = ranges[blob].defined
            ranges[blob] = ranges[blob]._replace(
                defined=i if defined is None else min(defined, i),
                size=blob_sizes.get(blob) if blob_sizes else None)
    return ranges


def optimize_interference(net, static_blobs, blob_sizes=None,
                          algo=AssignmentAlgorithm.GREEDY):
    """Recycles every blob but static_blobs (DAG-safe, see the module doc).
    Returns Optimization(net, assignments, blob_assignments): assignments is
    a list of slots, each a list of (blob, LiveRange); blob_assignments maps
    each renamed blob to its shared name. blob_sizes: name -> element count."""
    proto = _proto(net)
    shareable = set()
    for op in proto.op:
        shareable.update(op.input)
        shareable.update(op.output)
    shapes = {str(k): [int(v)] for k, v in (blob_sizes or {}).items()}
    optimized = _from_bytes(C.memonger_compute_blob_recycling_for_dag(
        proto.SerializeToString(), sorted(shareable), '', _names(static_blobs), shapes,
        algo == AssignmentAlgorithm.DYNAMIC_PROGRAMMING))
    ranges = compute_ranges(proto.op, blob_sizes)
    blob_assignments = {}
    slots = collections.OrderedDict()
    for op_a, op_b in zip(proto.op, optimized.op):
        for a, b in list(zip(op_a.input, op_b.input)) + list(zip(op_a.output, op_b.output)):
            if a != b:
                blob_assignments[a] = b
            members = slots.setdefault(b, [])
            if a not in [m for m, _ in members]:
                members.append((a, ranges[a]))
    return Optimization(net=_checked(proto, optimized), assignments=list(slots.values()),
                        blob_assignments=blob_assignments)


def optimize_inference_fast(net, static_blobs):
    """Caffe2's inference memonger: every blob but static_blobs recycled
    (the DAG-safe pass above); returns the optimized NetDef."""
    return optimize_interference(net, static_blobs).net


# ---- Caffe2's assignment helpers over live ranges ----
# An assignment is a list of slots; a slot is a list of (blob, LiveRange)
# whose ranges follow one another (each defined after the previous one's
# last use), so the blobs can share one buffer, as large as the largest.

def is_compatible(candidate_range, assignment, static_blobs):
    """Whether a blob living over `candidate_range` can join the slot
    `assignment` (none of whose blobs is static)."""
    if any(name in static_blobs for name, _ in assignment):
        return False
    return candidate_range.defined > assignment[-1][1].used


def _get_max_size(assignment):
    return max((r.size or 0) for _, r in assignment) if assignment else 0


def get_memory_usage(assignments):
    return sum(_get_max_size(slot) for slot in assignments)


def compute_blob_assignments(assignments):
    """blob -> the name of its slot (the slot's first blob)."""
    return {name: slot[0][0] for slot in assignments for name, _ in slot}


def compute_assignments_greedy(ranges_sorted, init_assignments=None):
    """Each blob, in order, joins the compatible slot whose size is closest
    to its own, or opens a slot."""
    assignments = [list(slot) for slot in (init_assignments or [])]
    seen = set(name for slot in assignments for name, _ in slot)
    for name, live in ranges_sorted:
        if name in seen:
            continue
        size = live.size or 0
        fitting = [i for i, slot in enumerate(assignments) if is_compatible(live, slot, [])]
        if fitting:
            best = min(fitting, key=lambda i: abs(_get_max_size(assignments[i]) - size))
            assignments[best].append((name, live))
        else:
            assignments.append([(name, live)])
    return assignments


_EXACT_SEARCH_LIMIT = 12


def compute_assignments_dp(ranges_sorted, init_assignment, counter=None):
    """The assignment of least memory: an exact search over every way to
    place the blobs (each joins a compatible slot or opens one), pruned by
    the best found so far; beyond 12 blobs, the greedy assignment."""
    start = [list(slot) for slot in (init_assignment or [])]
    seen = set(name for slot in start for name, _ in slot)
    todo = [(name, live) for name, live in ranges_sorted if name not in seen]
    if len(todo) > _EXACT_SEARCH_LIMIT:
        return compute_assignments_greedy(ranges_sorted, init_assignment)
    best = [compute_assignments_greedy(todo, start)]

    def place(index, slots):
        if get_memory_usage(slots) >= get_memory_usage(best[0]):
            return
        if index == len(todo):
            best[0] = [list(slot) for slot in slots]
            return
        name, live = todo[index]
        for slot in slots:
            if is_compatible(live, slot, []):
                slot.append((name, live))
                place(index + 1, slots)
                slot.pop()
        slots.append([(name, live)])
        place(index + 1, slots)
        slots.pop()

    place(0, [list(slot) for slot in start])
    return best[0]


def compute_interference_graph(ops):
    """networkx DiGraph over op indices: an edge i -> j (i < j) when op j
    reads a blob op i writes, with those blobs as `deps`."""
    import networkx as nx
    graph = nx.DiGraph()
    for i, op in enumerate(ops):
        graph.add_node(i, op=op)
    for i, parent in enumerate(ops):
        for j in range(i + 1, len(ops)):
            deps = set(ops[j].input).intersection(parent.output)
            if deps:
                graph.add_edge(i, j, deps=deps)
    return graph


def _depth_first_order(graph, starts):
    """Reverse post-order of a depth-first walk that visits `starts` in turn
    and, at each node, expands its children last-added first: a topological
    order whose ties follow `starts` (Caffe2's results, which came from
    networkx 1.x's topological_sort, do not depend on the installed
    networkx). Nodes no start reaches are left out."""
    explored, seen, order = set(), set(), []
    for start in starts:
        fringe = [start]
        while fringe:
            node = fringe[-1]
            if node in explored:
                fringe.pop()
                continue
            seen.add(node)
            children = [c for c in graph.successors(node) if c not in explored]
            if any(c in seen for c in children):
                raise ValueError('the graph has a cycle through node {}'.format(node))
            if children:
                fringe.extend(children)
            else:
                explored.add(node)
                order.append(node)
                fringe.pop()
    return list(reversed(order))


def topological_sort_traversal(g):
    """The ops of an interference graph in a topological order."""
    return _depth_first_order(g, list(g.nodes()))


def topological_sort_traversal_longest_path(g):
    """A topological order that starts the source ops with the longest path
    to the net's end first, so blobs made early are used early and their
    live ranges stay short. Each source's longest path to the (single, or
    added) sink joins a tree rooted at the sink; children are ordered by
    height, and the tree's leaves give the order of the sources."""
    if g.number_of_nodes() == 0:
        return []
    sinks = [n for n in g.nodes() if g.out_degree(n) == 0]
    sink = sinks[0] if len(sinks) == 1 else max(g.nodes()) + 1
    successors = {n: list(g.successors(n)) for n in g.nodes()}
    if len(sinks) > 1:
        successors[sink] = []
        for n in sinks:
            successors[n] = [sink]
    # Longest distance to the sink, and the next node on one such path
    # (ties to the first successor, so the paths form a tree).
    distance, step = {sink: 0}, {}
    for node in reversed(_depth_first_order(_Successors(successors), list(successors))):
        if node != sink:
            step[node] = max(successors[node], key=lambda c: distance[c])
            distance[node] = distance[step[node]] + 1
    sources = [n for n in g.nodes() if g.in_degree(n) == 0]
    children = collections.OrderedDict()
    for source in sources:
        node = source
        while node != sink:
            parent_children = children.setdefault(step[node], [])
            if node not in parent_children:
                parent_children.append(node)
            node = step[node]

    def leaves(node):
        below = children.get(node, [])
        if not below:
            return [node]
        ordered = sorted(below, key=lambda c: distance_from_leaf(c))
        return [leaf for child in ordered for leaf in leaves(child)]

    def distance_from_leaf(node):
        below = children.get(node, [])
        return 0 if not below else 1 + max(distance_from_leaf(c) for c in below)

    return _depth_first_order(g, leaves(sink))


class _Successors(object):
    """A successor map seen as the graph _depth_first_order walks."""

    def __init__(self, successors):
        self._successors = successors

    def successors(self, node):
        return self._successors[node]


def blob_nbytes(blob):
    """The bytes blob `blob` holds in the current workspace (0, with a
    warning, when it cannot be fetched)."""
    from doppio import workspace
    try:
        return workspace.FetchBlob(str(blob)).nbytes
    except Exception as error:  # a missing or non-tensor blob has no size here
        log.warning('Error when fetching blob %s: %s', blob, error)
        return 0


def collect_blob_sizes(net):
    """blob -> bytes, for every blob `net` (a NetDef) reads or writes, from
    the current workspace (what optimize_interference's blob_sizes takes)."""
    return {blob: blob_nbytes(blob) for op in net.op for blob in list(op.input) + list(op.output)}


def compute_statistics(assignments):
    """Statistics(baseline_nbytes, optimized_nbytes) of `assignments` (as from
    optimize_interference), from the blobs' current contents in the workspace."""
    from doppio import workspace
    blob_bytes = {blob: workspace.FetchBlob(blob).nbytes
                  for assignment in assignments for (blob, _) in assignment}
    baseline = sum(blob_bytes.values())
    optimized = sum(max(blob_bytes[blob] for (blob, _) in assignment)
                    for assignment in assignments)
    return Statistics(baseline_nbytes=baseline, optimized_nbytes=optimized)


_SIZEOFS = {
    caffe2_pb2.TensorProto.DOUBLE: 8,
    caffe2_pb2.TensorProto.FLOAT: 4,
    caffe2_pb2.TensorProto.FLOAT16: 2,
    caffe2_pb2.TensorProto.BFLOAT16: 2,
    caffe2_pb2.TensorProto.INT32: 4,
    caffe2_pb2.TensorProto.INT8: 1,
    caffe2_pb2.TensorProto.UINT8: 1,
    caffe2_pb2.TensorProto.UINT16: 2,
    caffe2_pb2.TensorProto.UINT32: 4,
    caffe2_pb2.TensorProto.UINT64: 8,
    caffe2_pb2.TensorProto.INT16: 2,
    caffe2_pb2.TensorProto.BOOL: 1,
    caffe2_pb2.TensorProto.INT64: 8,
}


def estimate_memory_usage(protos, shapes, types, devicescope):
    """Estimated (total, highwater, {op type: bytes}) allocation of running
    `protos` one after another, single-threaded, for the ops whose
    device_option equals `devicescope`. A blob is allocated when first
    written and released by Free (or Alias); shapes and types map blob names
    to shapes and TensorProto data types (unknown blobs count 0 bytes)."""
    def num_bytes(blob):
        if blob not in shapes or blob not in types:
            log.warning('Unknown blob encountered: %s', blob)
            return 0
        return _SIZEOFS[types[blob]] * int(np.prod(shapes[blob]))

    allocs_by_ops = collections.defaultdict(lambda: 0)
    current = 0
    highwater = 0
    total = 0
    allocated = set()
    for proto in protos:
        for op in _proto(proto).op:
            if op.type in ('Free', 'Alias'):
                for out in op.output:
                    if out in allocated:
                        current -= num_bytes(out)
                        allocated.remove(out)
            elif op.device_option == devicescope:
                for out in op.output:
                    if out not in allocated:
                        nbytes = num_bytes(out)
                        total += nbytes
                        current += nbytes
                        highwater = max(highwater, current)
                        allocated.add(out)
                        allocs_by_ops[op.type] += nbytes
    return (total, highwater, allocs_by_ops)
