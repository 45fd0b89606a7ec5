"""doppio.memonger (and its caffe2.python.memonger alias) on an MLP and a
small CNN: the rewritten nets train bit-identically to the originals with the
simple and the dag executor, use fewer distinct blobs, and the memory
estimates go down. Also Parallelize(optimize_gradient_memory=True,
dynamic_memory_management=True) on 2 CPU devices."""
import sys

import numpy as np
import pytest

from doppio import brew, core, data_parallel_model, memonger, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2 as caffe2_pb2

STEPS = 3
BATCH = 4


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def add_mlp(model):
    h = brew.fc(model, 'data', 'fc1', 6, 8)
    h = brew.relu(model, h, 'relu1')
    h = brew.fc(model, h, 'fc2', 8, 8)
    h = brew.relu(model, h, 'relu2')
    h = brew.fc(model, h, 'fc3', 8, 8)
    h = brew.relu(model, h, 'relu3')
    return brew.fc(model, h, 'fc4', 8, 3)


def add_cnn(model):
    h = brew.conv(model, 'data', 'conv1', 2, 4, 3, pad=1)
    h = brew.relu(model, h, 'relu1')
    h = brew.max_pool(model, h, 'pool1', kernel=2, stride=2)
    h = brew.conv(model, h, 'conv2', 4, 4, 3, pad=1)
    h = brew.relu(model, h, 'relu2')
    h = brew.conv(model, h, 'conv3', 4, 4, 3, pad=1)
    h = brew.relu(model, h, 'relu3')
    return brew.fc(model, h, 'fc', 4 * 4 * 4, 3)


DATA_SHAPES = {'mlp': (BATCH, 6), 'cnn': (BATCH, 2, 8, 8)}
BUILDERS = {'mlp': add_mlp, 'cnn': add_cnn}


def build_training(kind):
    model = model_helper.ModelHelper(name='memonger_' + kind)
    _INITIAL.pop(model.name, None)
    logits = BUILDERS[kind](model)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'loss'])
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, 0.1)
    return model, str(loss)


def batches(kind):
    rng = np.random.RandomState(11)
    return [(rng.randn(*DATA_SHAPES[kind]).astype(np.float32),
             rng.randint(0, 3, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


_INITIAL = {}


def initial_params(model):
    """Seeded parameters for `model`, made once per model."""
    if model.name not in _INITIAL:
        workspace.RunNetOnce(model.param_init_net.Proto())
        rng = np.random.RandomState(17)
        _INITIAL[model.name] = {
            str(p): (rng.randn(*workspace.FetchBlob(str(p)).shape) * 0.3).astype(np.float32)
            for p in model.params}
    return _INITIAL[model.name]


def train(model, net_proto, kind, net_type, fetch):
    """Runs the init net and STEPS steps of `net_proto` under `net_type`;
    returns the blobs in `fetch` after every step."""
    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net.Proto())
    # The fillers are random: every run starts from the same parameters.
    for name, value in initial_params(model).items():
        workspace.FeedBlob(name, value)
    proto = caffe2_pb2.NetDef()
    proto.CopyFrom(net_proto)
    proto.type = net_type
    if net_type == 'dag':
        # The unoptimized CNN itself is not bit-reproducible run to run when
        # several workers run its conv ops at once (last-bit differences in
        # conv1's gradient, seen without memonger too), so it gets one worker
        # (still the dag scheduler's order); the MLP runs 4 concurrently.
        proto.num_workers = 4 if kind == 'mlp' else 1
        proto.arg.add(name='intra_op_threads', i=1)
    x, y = batches(kind)[0]
    workspace.FeedBlob('data', x)
    workspace.FeedBlob('label', y)
    workspace.CreateNet(proto, overwrite=True)
    history = []
    for x, y in batches(kind):
        workspace.FeedBlob('data', x)
        workspace.FeedBlob('label', y)
        workspace.RunNet(proto.name)
        history.append({name: workspace.FetchBlob(name).copy() for name in fetch})
    return history


def assert_same_training(model, original, optimized, kind, fetch):
    for net_type in ['simple', 'dag']:
        expected = train(model, original, kind, net_type, fetch)
        got = train(model, optimized, kind, net_type, fetch)
        for step, (e, g) in enumerate(zip(expected, got)):
            for name in fetch:
                np.testing.assert_array_equal(
                    g[name], e[name], err_msg='{} {} step {} {}'.format(kind, net_type, step,
                                                                        name))


def distinct_blobs(proto):
    return {b for op in proto.op for b in list(op.input) + list(op.output)}


def param_grads(model):
    return {str(g) for g in model.param_to_grad.values()}


def blob_shapes_after_one_run(model, kind):
    train(model, model.net.Proto(), kind, 'simple', [])
    shapes = {}
    for b in distinct_blobs(model.net.Proto()):
        value = workspace.FetchBlob(b)
        if not isinstance(value, bytes):  # bytes: not a tensor (the optimizer's mutex)
            shapes[b] = value.shape
    return shapes


@pytest.mark.parametrize('kind', ['mlp', 'cnn'])
@pytest.mark.parametrize('share_activations', [False, True])
def test_share_grad_blobs_trains_identically(kind, share_activations):
    model, loss = build_training(kind)
    original = model.net.Proto()
    before = original.SerializeToString()
    shapes = blob_shapes_after_one_run(model, kind) if share_activations else None
    optimized = memonger.share_grad_blobs(
        model.net, [loss], param_grads(model), '', share_activations=share_activations,
        blob_shapes=shapes)
    assert isinstance(optimized, caffe2_pb2.NetDef)
    assert original.SerializeToString() == before, 'the input proto was modified'
    assert len(distinct_blobs(optimized)) < len(distinct_blobs(original))
    assert any(b.startswith('__m') and b.endswith('_shared') for b in distinct_blobs(optimized))
    protected = set(str(p) for p in model.params) | param_grads(model) | {loss}
    assert protected <= distinct_blobs(optimized)
    assert memonger.verify_graph_equality(original, optimized)
    assert memonger.verify_inplace_blobs(original, optimized)
    fetch = [loss] + [str(p) for p in model.params]
    assert_same_training(model, original, optimized, kind, fetch)


@pytest.mark.parametrize('kind', ['mlp', 'cnn'])
def test_release_blobs_when_used_adds_free_and_trains_identically(kind):
    model, loss = build_training(kind)
    original = model.net.Proto()
    shared = memonger.share_grad_blobs(model.net, [loss], param_grads(model), '')
    released = memonger.release_blobs_when_used(shared, {loss})
    frees = [op for op in released.op if op.type == 'Free']
    assert frees and all(list(op.input) == list(op.output) for op in frees)
    freed = {op.input[0] for op in frees}
    assert loss not in freed
    assert not freed & set(str(p) for p in model.params)
    fetch = [loss] + [str(p) for p in model.params]
    assert_same_training(model, original, released, kind, fetch)
    # The selector keeps every blob it rejects.
    kept = memonger.release_blobs_when_used(original, {loss}, selector_fun=lambda b: 'fc' not in b)
    assert not any('fc' in op.input[0] for op in kept.op if op.type == 'Free')


def test_estimate_memory_usage_drops_with_free_ops():
    model, loss = build_training('cnn')
    shapes = blob_shapes_after_one_run(model, 'cnn')
    workspace_types = {np.dtype(np.float32): (caffe2_pb2.TensorProto.FLOAT, 4),
                       np.dtype(np.int32): (caffe2_pb2.TensorProto.INT32, 4),
                       np.dtype(np.int64): (caffe2_pb2.TensorProto.INT64, 8)}
    types = {b: workspace_types[workspace.FetchBlob(b).dtype][0] for b in shapes}
    itemsize = {b: workspace_types[workspace.FetchBlob(b).dtype][1] for b in shapes}
    original = model.net.Proto()
    released = memonger.release_blobs_when_used(original, {loss})
    device = caffe2_pb2.DeviceOption()
    total_before, high_before, by_op = memonger.estimate_memory_usage(
        [original], shapes, types, device)
    total_after, high_after, _ = memonger.estimate_memory_usage(
        [released], shapes, types, device)
    # Independent count: every blob written by an op of that device scope.
    written = {b for op in original.op if op.device_option == device for b in op.output}
    expected_total = sum(itemsize[b] * int(np.prod(shapes[b])) for b in written if b in shapes)
    assert expected_total > 0
    assert total_before == expected_total
    assert high_before == total_before  # nothing is ever freed
    assert total_after == total_before
    assert high_after < high_before
    assert by_op['Conv'] > 0


def test_optimize_interference_statistics_report_fewer_bytes():
    model = model_helper.ModelHelper(name='inference')
    logits = add_cnn(model)
    brew.softmax(model, logits, 'prob')
    workspace.RunNetOnce(model.param_init_net.Proto())
    workspace.FeedBlob('data', batches('cnn')[0][0])
    workspace.RunNetOnce(model.net.Proto())
    static = set(str(p) for p in model.params) | {'data', 'prob'}
    optim = memonger.optimize_interference(model.net.Proto(), static)
    assert memonger.verify_graph_equality(model.net.Proto(), optim.net)
    stats = memonger.compute_statistics(optim.assignments)
    # Baseline: the bytes of every blob the net touches, counted here.
    blobs = distinct_blobs(model.net.Proto())
    assert stats.baseline_nbytes == sum(workspace.FetchBlob(b).nbytes for b in blobs)
    assert stats.optimized_nbytes < stats.baseline_nbytes


def test_optimize_inference_for_dag_gives_the_same_outputs():
    model = model_helper.ModelHelper(name='inference')
    _INITIAL.pop(model.name, None)
    logits = add_cnn(model)
    brew.softmax(model, logits, 'prob')
    proto = model.net.Proto()
    proto.external_input.extend(['data'] + [str(p) for p in model.params])
    proto.external_output.append('prob')
    optimized = memonger.optimize_inference_for_dag(model.net, ['data'])
    params = initial_params(model)
    assert len(distinct_blobs(optimized)) < len(distinct_blobs(proto))
    results = []
    for net in (proto, optimized):
        workspace.ResetWorkspace()
        workspace.RunNetOnce(model.param_init_net.Proto())
        for name, value in params.items():
            workspace.FeedBlob(name, value)
        workspace.FeedBlob('data', batches('cnn')[0][0])
        run = caffe2_pb2.NetDef()
        run.CopyFrom(net)
        run.type = 'dag'
        run.num_workers = 4
        workspace.RunNetOnce(run)
        results.append(workspace.FetchBlob('prob'))
    np.testing.assert_array_equal(results[1], results[0])


def test_caffe2_alias_is_the_same_module():
    from caffe2.python import memonger as caffe2_memonger
    assert caffe2_memonger is memonger


def test_bad_input_raises():
    with pytest.raises(TypeError):
        memonger.share_grad_blobs('not a net', [], set(), '')
    net = caffe2_pb2.NetDef(name='bad')
    op = net.op.add(type='Relu', input=['ghost'], output=['y'])
    with pytest.raises(RuntimeError, match='ghost'):
        memonger.optimize_inference_for_dag(net, [])
    with pytest.raises(ValueError, match='blob_shapes'):
        memonger.share_grad_blobs(net, [], set(), '', blob_shapes={'y': ['x']})
    del op


def _forward(model, loss_scale):
    logits = add_mlp(model)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def _train_parallel(**options):
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='dp_memonger')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=_forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1),
        devices=[0, 1], num_threads_per_device=2, **options)
    data_parallel_model.RunInitNet(model)
    rng = np.random.RandomState(5)
    init = {str(p)[len('cpu_0/'):]: rng.randn(*workspace.FetchBlob(str(p)).shape)
            .astype(np.float32) for p in model.params if str(p).startswith('cpu_0/')}
    for name, value in init.items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    history = []
    for x, y in batches('mlp'):
        for d in (0, 1):
            workspace.FeedBlob('cpu_{}/data'.format(d), x[2 * d:2 * d + 2])
            workspace.FeedBlob('cpu_{}/label'.format(d), y[2 * d:2 * d + 2])
        data_parallel_model.RunNet(model, 1)
        history.append({str(p): workspace.FetchBlob(str(p)).copy() for p in model.params})
        history[-1].update({'cpu_{}/scaled_loss'.format(d): workspace.FetchBlob(
            'cpu_{}/scaled_loss'.format(d)).copy() for d in (0, 1)})
    return model, history


def test_parallelize_with_memonger_trains_identically():
    _, expected = _train_parallel()
    model, got = _train_parallel(optimize_gradient_memory=True, dynamic_memory_management=True,
                                 blobs_to_keep=['scaled_loss'])
    proto = model.net.Proto()
    names = distinct_blobs(proto)
    assert any(b.startswith('cpu_0/__m') for b in names)
    assert any(b.startswith('cpu_1/__m') for b in names)
    assert any(op.type == 'Free' for op in proto.op)
    for grad in model.param_to_grad.values():
        assert str(grad) in names
    for e, g in zip(expected, got):
        assert set(e) == set(g)
        for name in e:
            np.testing.assert_array_equal(g[name], e[name], err_msg=name)


# ---- Caffe2's assignment helpers ----

def _valid(assignments, ranges):
    """Every blob placed once; within a slot, each range starts after the
    previous one's last use."""
    placed = [name for slot in assignments for name, _ in slot]
    assert sorted(placed) == sorted(name for name, _ in ranges)
    for slot in assignments:
        for (_, a), (_, b) in zip(slot, slot[1:]):
            assert b.defined > a.used


def _brute_force_usage(ranges):
    """Least memory over every partition into slots (independent of the
    module: any order of the ranges inside a slot, checked directly)."""
    best = [float('inf')]

    def fits(slot, live):
        return all(live.defined > r.used or r.defined > live.used for _, r in slot)

    def go(i, slots):
        if i == len(ranges):
            best[0] = min(best[0], sum(max(r.size for _, r in slot) for slot in slots))
            return
        for slot in slots:
            if fits(slot, ranges[i][1]):
                slot.append(ranges[i])
                go(i + 1, slots)
                slot.pop()
        slots.append([ranges[i]])
        go(i + 1, slots)
        slots.pop()
    go(0, [])
    return best[0]


def test_greedy_and_exact_assignments():
    L = memonger.LiveRange
    ranges = [('a', L(0, 2, 8)), ('b', L(1, 3, 2)), ('c', L(3, 5, 2)), ('d', L(4, 6, 8))]
    greedy = memonger.compute_assignments_greedy(ranges, None)
    _valid(greedy, ranges)
    # c (from 3) fits only after a (used until 2), d only after b: greedy
    # pays 8 + 8; keeping c apart and putting d after a costs 8 + 2 + 2.
    assert [[n for n, _ in slot] for slot in greedy] == [['a', 'c'], ['b', 'd']]
    assert memonger.get_memory_usage(greedy) == 16
    assert memonger.compute_blob_assignments(greedy) == {'a': 'a', 'c': 'a', 'b': 'b',
                                                         'd': 'b'}
    exact = memonger.compute_assignments_dp(ranges, None)
    _valid(exact, ranges)
    assert memonger.get_memory_usage(exact) == 12
    rng = np.random.RandomState(0)
    for _ in range(30):
        starts = sorted(rng.randint(0, 10, size=6))
        ranges = [('x%d' % k, L(int(s), int(s + rng.randint(0, 4)), int(rng.randint(1, 9))))
                  for k, s in enumerate(starts)]
        exact = memonger.compute_assignments_dp(ranges, None)
        _valid(exact, ranges)
        assert memonger.get_memory_usage(exact) <= memonger.get_memory_usage(
            memonger.compute_assignments_greedy(ranges, None))
        # Slots keep the order of definition, so only orderable slots count;
        # the optimum over those equals the unrestricted one for intervals.
        assert memonger.get_memory_usage(exact) == _brute_force_usage(ranges)
    assert not memonger.is_compatible(L(5, 6, 1), [('s', L(0, 1, 1))], ['s'])


def test_interference_graph_and_fast_inference():
    m = model_helper.ModelHelper(name='fast_inference')
    brew.fc(m, 'data', 'fc1', 4, 5)
    brew.relu(m, 'fc1', 'r1')
    brew.fc(m, 'r1', 'fc2', 5, 3)
    m.net.Copy('fc2', 'out')
    graph = memonger.compute_interference_graph(m.net.Proto().op)
    assert sorted(graph.edges()) == [(0, 1), (1, 2), (2, 3)]
    assert graph.edges[0, 1]['deps'] == {'fc1'}
    workspace.RunNetOnce(m.param_init_net)
    workspace.FeedBlob('data', np.random.RandomState(1).randn(2, 4).astype(np.float32))
    workspace.RunNetOnce(m.net)
    want = workspace.FetchBlob('out')
    static = [o for op in m.param_init_net.Proto().op for o in op.output] + ['data', 'out']
    optimized = memonger.optimize_inference_fast(m.net.Proto(), static)
    names = set(b for op in optimized.op for b in list(op.input) + list(op.output))
    assert len(names) < len(set(b for op in m.net.Proto().op
                                for b in list(op.input) + list(op.output)))
    workspace.FeedBlob('out', np.zeros(1, np.float32))
    workspace.RunNetOnce(optimized)
    np.testing.assert_array_equal(workspace.FetchBlob('out'), want)
    sizes = memonger.collect_blob_sizes(m.net.Proto())
    assert sizes['fc1_w'] == 5 * 4 * 4 and sizes['data'] == 2 * 4 * 4



def _is_topological(graph, order):
    position = {node: i for i, node in enumerate(order)}
    return (sorted(order) == sorted(graph.nodes()) and
            all(position[a] < position[b] for a, b in graph.edges()))


def _two_branches(extra_chain=False):
    """Caffe2's example: ops 0 -> 1 -> 3 and 2 -> 3 (and 4 -> 5 apart)."""
    m = model_helper.ModelHelper(name='branches')
    m.net.Copy('w_compressed', 'conv0_w')
    brew.conv(m, 'data', 'conv0', 3, 4, 3)
    m.net.Copy('conv2_w', 'conv2_w')
    brew.conv(m, 'conv0', 'conv2', 4, 4, 3)
    if extra_chain:
        m.net.Copy('a', 'b')
        m.net.Copy('b', 'c')
    return memonger.compute_interference_graph(m.net.Proto().op)


def test_topological_sorts():
    graph = _two_branches()
    assert sorted(graph.edges()) == [(0, 1), (1, 3), (2, 3)]
    # Depth first from the ops in index order: the last start runs first.
    assert memonger.topological_sort_traversal(graph) == [2, 0, 1, 3]
    # The source with the longer path to the end (0, two ops) goes first.
    assert memonger.topological_sort_traversal_longest_path(graph) == [0, 1, 2, 3]
    graph = _two_branches(extra_chain=True)
    assert memonger.topological_sort_traversal(graph) == [4, 5, 2, 0, 1, 3]
    assert memonger.topological_sort_traversal_longest_path(graph) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize('seed', range(20))
def test_topological_sorts_of_random_dags_are_valid(seed):
    import networkx as nx
    rng = np.random.RandomState(seed)
    size = rng.randint(1, 12)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(size))
    for a in range(size):
        for b in range(a + 1, size):
            if rng.rand() < 0.25:
                graph.add_edge(a, b)
    for sort in (memonger.topological_sort_traversal,
                 memonger.topological_sort_traversal_longest_path):
        assert _is_topological(graph, sort(graph)), (sort.__name__, sorted(graph.edges()))


def test_share_activations_keeps_the_forward_head():
    m = model_helper.ModelHelper(name='head')
    with core.NameScope('x'):
        hidden = 'data'
        for i, (dim_in, dim_out) in enumerate([(4, 3), (3, 3), (3, 3), (3, 3)]):
            hidden = brew.fc(m, hidden, 'fc{}'.format(i), dim_in=dim_in, dim_out=dim_out)
        m.net.Relu(hidden, hidden)
        m.net.Softmax(hidden, 'pred')
        m.net.LabelCrossEntropy(['pred', 'label'], 'xent')
        m.net.AveragedLoss('xent', 'loss')
    m.AddGradientOperators(['x/loss'])
    optimized = memonger.share_grad_blobs(m.net, ['x/loss'], set(m.param_to_grad.values()),
                                          'x/', share_activations=True)
    names = set(b for op in optimized.op for b in list(op.input) + list(op.output))
    # The last two layers and what follows them stay; earlier ones may go.
    for kept in ['x/fc2', 'x/fc3', 'x/pred', 'x/xent']:
        assert kept in names, kept
    plain = memonger.share_grad_blobs(m.net, ['x/loss'], set(m.param_to_grad.values()), 'x/')
    assert len(names) <= len(set(b for op in plain.op for b in list(op.input) + list(op.output)))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
