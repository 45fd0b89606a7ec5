"""Checks of Parallelize_GPU's nets that need no GPU, shared by the GPU
data-parallel tests: where ops and blobs live, the dag executor's
dependencies (re-derived here from core/net_dag.h's rules), a symbolic run
in which a blob's value records whose contributions it holds, and a copy of
a GPU net retargeted to CPU devices so its arithmetic can run here.

Symbolic values: a collections.Counter of contributions for anything
summed; Concat makes a tuple of its inputs' values, so a gathered blob
shows which slices it holds and in what order."""
import collections
import random
import re

from doppio.proto import doppio_pb2

PREFIX = re.compile(r'^gpu_(\d+)/')
NCCL_OPS = ('NCCLAllreduce', 'NCCLBroadcast', 'NCCLReduce')
SHARD_OPS = ('Allreduce', 'Broadcast', 'AllreduceCoalesced')


def device_of(blob):
    match = PREFIX.match(blob)
    return int(match.group(1)) if match else None


def strip(blob):
    return PREFIX.sub('', blob)


def is_shard_collective(op):
    return op.engine == 'GLOO' and op.type in SHARD_OPS


def root_of(op):
    roots = [a.i for a in op.arg if a.name == 'root']
    return roots[0] if roots else 0


def check_placement(net, devices, host_blobs):
    """Every blob is a host blob (shared by the devices, or the common world
    and store handler) or lives on one of `devices`; NCCL and Gloo
    collectives sit on device 0 (Gloo with engine GLOO), CreateCommonWorld
    on the CPU; any other op writes only its own device's blobs, and reads
    only them unless it is a Copy (the cross-device move)."""
    for op in net.op:
        for blob in list(op.input) + list(op.output) + list(op.control_input):
            assert not blob.startswith('cpu_'), (op.type, blob)
            assert blob in host_blobs or device_of(blob) in devices, (op.type, blob)
        if op.type == 'CreateCommonWorld':
            assert op.device_option.device_type == doppio_pb2.CPU, op
            continue
        if op.type in NCCL_OPS or is_shard_collective(op):
            assert op.device_option.device_type == doppio_pb2.CUDA, op
            assert op.device_option.cuda_gpu_id == devices[0], op
            continue
        assert op.type not in SHARD_OPS, op  # the in-process CPU collectives
        prefixed_outputs = [device_of(b) for b in op.output if b not in host_blobs]
        if not prefixed_outputs:
            # A shared op (iteration counter, learning rate) runs once.
            continue
        assert op.device_option.device_type == doppio_pb2.CUDA, op
        device = op.device_option.cuda_gpu_id
        assert set(prefixed_outputs) == {device}, op
        if op.type != 'Copy':
            readers = {device_of(b) for b in list(op.input) + list(op.control_input)
                       if b not in host_blobs}
            assert readers <= {device}, op


def missing_kernels(*nets):
    """(op type, device) pairs of `nets` that no kernel is registered for."""
    from doppio import workspace
    missing = set()
    for net in nets:
        for op in net.op:
            device = 'CUDA' if op.device_option.device_type == doppio_pb2.CUDA else 'CPU'
            engines = [e for d, e in workspace.C.registered_operator_devices(op.type)
                       if d == device]
            if not engines or (op.engine and op.engine not in engines and '' not in engines):
                missing.add((op.type, device, op.engine))
    return sorted(missing)


def dependencies(net):
    """Parents of each op as the dag executor derives them: the last writer
    of every input, control input and output, and every reader of an
    output since its last write."""
    parents = []
    last_writer = {}
    readers = collections.defaultdict(list)
    for index, op in enumerate(net.op):
        deps = set()
        for blob in list(op.input) + list(op.control_input) + list(op.output):
            if blob in last_writer:
                deps.add(last_writer[blob])
        for blob in op.output:
            deps.update(r for r in readers[blob] if r != index)
        for blob in list(op.input) + list(op.control_input):
            readers[blob].append(index)
        for blob in op.output:
            last_writer[blob] = index
            readers[blob] = []
        parents.append(deps)
    return parents


def apply_local(op, seen, state, local_value):
    """One op of the symbolic run, other than a cross-shard collective."""
    if op.type == 'Copy':
        state[op.output[0]] = seen[op.input[0]]
    elif op.type in ('Sum', 'NCCLAllreduce', 'NCCLReduce'):
        if op.type == 'NCCLReduce':
            assert root_of(op) == 0 and len(op.output) == 1, op
        total = collections.Counter()
        for blob in op.input:
            assert isinstance(seen[blob], collections.Counter), (op, blob, seen[blob])
            total += seen[blob]
        for blob in op.output:
            state[blob] = total
    elif op.type == 'NCCLBroadcast':
        assert root_of(op) == 0, op
        for blob in op.output:
            state[blob] = seen[op.input[0]]
    elif op.type == 'Concat':
        state[op.output[0]] = tuple(seen[b] for b in op.input)
        if len(op.output) > 1:
            state[op.output[1]] = ('split', len(op.input))
    elif op.type == 'CreateCommonWorld':
        state[op.output[0]] = 'world'
    else:
        for blob in op.output:
            state[blob] = local_value(op, blob)


def evaluate(net, state, local_value):
    """Symbolic run of one process's net in its listed order (a cross-shard
    collective sums over this one shard). Returns [(op index, op, {input:
    value read})]."""
    return run_shards([net], [state], lambda shard, op, blob: local_value(op, blob))[0]


def run_shards(nets, states, local_value, rng=None):
    """Symbolic run of one net per shard, each shard in its listed order or,
    with `rng`, in a random order its dag executor could choose. A Gloo
    collective runs once every shard has nothing else to run and the same
    collective is ready in all of them: Allreduce (and AllreduceCoalesced)
    sums the shards' values, Broadcast gives every shard the root's. A shard
    stuck with a different collective, or with several, would hang the real
    run, and fails here. local_value(shard, op, blob) gives what other ops
    write. Returns per shard [(op index, op, {input: value read})]."""
    shards = range(len(nets))
    parents = [dependencies(net) for net in nets]
    waiting_on = [[len(p) for p in parents[s]] for s in shards]
    children = []
    for s in shards:
        kids = collections.defaultdict(list)
        for index, deps in enumerate(parents[s]):
            for parent in deps:
                kids[parent].append(index)
        children.append(kids)
    ready = [sorted(i for i, n in enumerate(waiting_on[s]) if n == 0) for s in shards]
    reads = [[] for _ in shards]
    remaining = [len(net.op) for net in nets]

    def finish(s, index):
        remaining[s] -= 1
        for child in children[s][index]:
            waiting_on[s][child] -= 1
            if waiting_on[s][child] == 0:
                ready[s].append(child)
        ready[s].sort()

    while any(remaining):
        for s in shards:
            while True:
                local = [i for i in ready[s] if not is_shard_collective(nets[s].op[i])]
                if not local:
                    break
                index = rng.choice(local) if rng else local[0]
                ready[s].remove(index)
                op = nets[s].op[index]
                seen = {b: states[s].get(b) for b in op.input}
                reads[s].append((index, op, seen))
                apply_local(op, seen, states[s],
                            lambda op_, blob, s=s: local_value(s, op_, blob))
                finish(s, index)
        if not any(remaining):
            break
        assert all(len(ready[s]) == 1 for s in shards), (
            'shards would hang: ready collectives {}'.format(
                [[nets[s].op[i].name for i in ready[s]] for s in shards]))
        ops = [nets[s].op[ready[s][0]] for s in shards]
        assert len(set((op.type, tuple(op.input[1:])) for op in ops)) == 1, (
            'shards would hang: different collectives {}'.format([op.name for op in ops]))
        seens = [{b: states[s].get(b) for b in op.input} for s, op in zip(shards, ops)]
        for s, op in zip(shards, ops):
            reads[s].append((ready[s][0], op, seens[s]))
        for position, blob in enumerate(ops[0].input[1:], start=1):
            if ops[0].type == 'Broadcast':
                value = seens[root_of(ops[0])][blob]
            else:
                value = collections.Counter()
                for seen in seens:
                    assert isinstance(seen[blob], collections.Counter), (ops[0], seen[blob])
                    value += seen[blob]
            for s in shards:
                assert ops[s].output[position - 1] == blob, ops[s]
                states[s][blob] = value
        for s in shards:
            index = ready[s].pop()
            finish(s, index)
    return reads


def random_orders(count, seed=0):
    """`count` independent random generators, one per symbolic run."""
    return [random.Random(seed + i) for i in range(count)]


def retarget_to_cpu(proto):
    """A copy of a GPU net whose ops run on CPU devices with the same ids:
    the graph is unchanged, so its arithmetic can be checked without a GPU.
    NCCL ops have no CPU kernel; retarget nets built without NCCL."""
    copy = type(proto)()
    copy.CopyFrom(proto)
    for op in copy.op:
        assert op.type not in NCCL_OPS, op
        if op.device_option.device_type == doppio_pb2.CUDA:
            op.device_option.device_type = doppio_pb2.CPU
    return copy
