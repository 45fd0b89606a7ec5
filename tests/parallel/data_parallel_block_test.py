"""DataParallelBlock and the scatter / gather / replicate / parallel_apply
primitives (python_api/doppio/parallel_primitives.py).

The block tests train a model twice from the same initial params on the same
batches -- once plain, once with a block wrapped in DataParallelBlock -- and
require the same losses and params: the replicas read the one set of params,
so their gradients add up to the single-device gradient."""
import zlib

import numpy as np
import pytest

from doppio import brew, data_parallel_model, model_helper, optimizer, workspace
from doppio import parallel_primitives as pp
from python_api.examples import fmnist_train

STEPS = 3
BATCH = 8  # over 3 devices: chunks of 3, 3, 2


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def run(net):
    workspace.RunNetOnce(net.Proto() if hasattr(net, 'Proto') else net)


# ------------------------------------------------------------ primitives


def test_scatter_gather_round_trip_with_uneven_chunks():
    model = model_helper.ModelHelper(name='scatter_gather')
    x = np.arange(7 * 2, dtype=np.float32).reshape(7, 2)
    workspace.FeedBlob('x', x)
    parts = pp.scatter(model.net, 'x', [0, 1, 2])
    assert [str(p) for p in parts] == ['cpu_0/x', 'cpu_1/x', 'cpu_2/x']
    joined = pp.gather(model.net, parts, output='y')
    run(model.net)
    for part, rows in zip(parts, [slice(0, 3), slice(3, 6), slice(6, 7)]):
        np.testing.assert_array_equal(workspace.FetchBlob(str(part)), x[rows])
    np.testing.assert_array_equal(workspace.FetchBlob(str(joined)), x)


def test_scatter_along_another_axis():
    model = model_helper.ModelHelper(name='scatter_axis')
    x = np.arange(2 * 5, dtype=np.float32).reshape(2, 5)
    workspace.FeedBlob('x', x)
    parts = pp.scatter(model.net, 'x', [0, 1], axis=1)
    run(model.net)
    np.testing.assert_array_equal(workspace.FetchBlob(str(parts[0])), x[:, :3])
    np.testing.assert_array_equal(workspace.FetchBlob(str(parts[1])), x[:, 3:])


def test_scatter_of_a_too_small_batch_is_an_error():
    model = model_helper.ModelHelper(name='too_small')
    workspace.FeedBlob('batch', np.zeros((2, 4), np.float32))
    pp.scatter(model.net, 'batch', [0, 1, 2])
    with pytest.raises(RuntimeError) as info:
        run(model.net)
    for fragment in ('Chunk', "'batch'", '[2, 4]', '3 outputs'):
        assert fragment in str(info.value)


def test_replicate_copies_and_its_gradient_sums():
    model = model_helper.ModelHelper(name='replicate')
    w = np.random.RandomState(0).rand(3).astype(np.float32)
    workspace.FeedBlob('w', w)
    copies = pp.replicate(model.net, ['w'], [0, 1])
    assert [[str(b) for b in c] for c in copies] == [['cpu_0/w'], ['cpu_1/w']]
    # loss = sum(2 * w0) + sum(3 * w1): d loss / d w = 5 everywhere.
    s0 = model.net.Scale(copies[0][0], 's0', scale=2.0)
    s1 = model.net.Scale(copies[1][0], 's1', scale=3.0)
    total = model.net.Sum([s0, s1], 'total')
    loss = model.net.SumElements(total, 'loss')
    grads = model.net.AddGradientOperators([loss])
    run(model.net)
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/w'), w)
    np.testing.assert_allclose(workspace.FetchBlob(str(grads['w'])), np.full(3, 5.0))


def test_parallel_apply_clones_per_device_sharing_params():
    model = model_helper.ModelHelper(name='apply')
    rng = np.random.RandomState(0)
    x, w = rng.rand(4, 3).astype(np.float32), rng.rand(3).astype(np.float32)
    workspace.FeedBlob('x', x)
    workspace.FeedBlob('w', w)
    parts = pp.scatter(model.net, 'x', [0, 1])
    renames = pp.parallel_apply(model.net, lambda net: net.Mul(['x', 'w'], 'y', broadcast=1),
                                [0, 1], shared=['w'])
    assert [r('y') for r in renames] == ['cpu_0/y', 'cpu_1/y']
    ops = model.net.Proto().op[1:]
    assert [list(op.input) for op in ops] == [['cpu_0/x', 'w'], ['cpu_1/x', 'w']]
    assert [op.device_option.cuda_gpu_id for op in ops] == [0, 1]
    run(model.net)
    np.testing.assert_allclose(workspace.FetchBlob('cpu_1/y'), x[2:] * w, rtol=1e-6)
    assert len(parts) == 2


# ---------------------------------------------------- the reference CNN


def conv_part(model, data):
    """add_reference_cnn up to pool2 (the BN layers stay outside the block:
    inside one they would normalize per replica)."""
    init = fmnist_train.uniform_init
    conv1 = brew.conv(model, data, 'conv1', dim_in=1, dim_out=32, kernel=3, pad=1,
                      **init(1 * 3 * 3))
    bn1 = brew.spatial_bn(model, conv1, 'bn1', 32, epsilon=1e-5, momentum=0.9, is_test=0)
    relu1 = brew.relu(model, bn1, bn1)
    pool1 = brew.max_pool(model, relu1, 'pool1', kernel=2, stride=2)
    conv2 = brew.conv(model, pool1, 'conv2', dim_in=32, dim_out=64, kernel=3, pad=1,
                      **init(32 * 3 * 3))
    bn2 = brew.spatial_bn(model, conv2, 'bn2', 64, epsilon=1e-5, momentum=0.9, is_test=0)
    relu2 = brew.relu(model, bn2, bn2)
    return brew.max_pool(model, relu2, 'pool2', kernel=2, stride=2)


def fc_part(model, pool2):
    """add_reference_cnn's FC block: FC 3136->128, Relu, FC 128->10, Softmax."""
    init = fmnist_train.uniform_init
    fc3 = brew.fc(model, pool2, 'fc3', dim_in=64 * 7 * 7, dim_out=128, **init(64 * 7 * 7))
    relu3 = brew.relu(model, fc3, fc3)
    pred = brew.fc(model, relu3, 'pred', dim_in=128, dim_out=10, **init(128))
    return brew.softmax(model, pred, 'softmax')


def initial_value(name, shape):
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if name.endswith('_s'):
        return (1.0 + 0.1 * rng.randn(*shape)).astype(np.float32)
    if name.endswith(('_rm', '_riv')) or name.endswith('_b') and 'bn' in name:
        return (0.1 * rng.rand(*shape)).astype(np.float32)
    return (0.1 * rng.randn(*shape)).astype(np.float32)


def batches(shape, steps, seed=5):
    rng = np.random.RandomState(seed)
    return [(rng.rand(BATCH, *shape).astype(np.float32),
             rng.randint(0, 10, size=BATCH).astype(np.int32)) for _ in range(steps)]


def train(model, loss, data):
    """STEPS of SGD from fixed params; returns (losses, params after)."""
    workspace.ResetWorkspace()
    run(model.param_init_net)
    params = sorted(set(str(p) for p in model.GetParams()) |
                    set(str(b) for b in model.GetComputedParams()))
    for p in params:
        workspace.FeedBlob(p, initial_value(p, workspace.FetchBlob(p).shape))
    workspace.FeedBlob('data', data[0][0])
    workspace.FeedBlob('label', data[0][1])
    workspace.CreateNet(model.net.Proto(), overwrite=True)
    losses = []
    for x, y in data:
        workspace.FeedBlob('data', x)
        workspace.FeedBlob('label', y)
        workspace.RunNet(model.net.Proto().name)
        losses.append(float(workspace.FetchBlob(str(loss))))
    return losses, {p: workspace.FetchBlob(p).copy() for p in params}


def build_cnn(devices):
    model = model_helper.ModelHelper(name='dp_block_cnn_%s' % devices)
    pool2 = conv_part(model, 'data')
    if devices is None:
        softmax = fc_part(model, pool2)
    else:
        softmax = data_parallel_model.DataParallelBlock(model, fc_part, pool2, devices)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=0.05, policy='fixed', momentum=0.9,
                        nesterov=False)
    return model, loss


def test_split_model_is_the_reference_cnn():
    plain = model_helper.ModelHelper(name='split')
    fc_part(plain, conv_part(plain, 'data'))
    reference = model_helper.ModelHelper(name='reference')
    fmnist_train.add_reference_cnn(reference, 'data', is_test=0)
    assert plain.net.Proto().op == reference.net.Proto().op
    assert plain.param_init_net.Proto().op == reference.param_init_net.Proto().op


@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2]])
def test_reference_cnn_with_data_parallel_fc_block_matches_single_device(devices):
    data = batches((1, 28, 28), STEPS)
    plain, plain_loss = build_cnn(None)
    expected_losses, expected_params = train(plain, plain_loss, data)
    optimizer.reset_optimizer_instance_count()
    parallel, parallel_loss = build_cnn(devices)
    chunks = [op for op in parallel.net.Proto().op if op.type == 'Chunk']
    assert [list(op.output) for op in chunks] == [['cpu_%d/pool2' % d for d in devices]]
    losses, params = train(parallel, parallel_loss, data)
    assert sorted(params) == sorted(expected_params)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
    assert abs(expected_losses[0] - expected_losses[-1]) > 1e-4  # it trained
    # Only the summation order differs (the replicas' weight gradients are
    # added by the backward pass's Sum instead of inside one GEMM); after
    # three momentum steps through BN that round-off reaches ~3e-6.
    for name in expected_params:
        np.testing.assert_allclose(params[name], expected_params[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)


# -------------------------------------------- nested inputs and outputs


def mlp_block(model, inputs):
    """((a, [b]) -> [h, (ha, hb)]): two FCs whose outputs are summed."""
    a, (b,) = inputs
    ha = brew.fc(model, a, 'fa', dim_in=4, dim_out=3)
    hb = brew.fc(model, b, 'fb', dim_in=5, dim_out=3)
    h = model.net.Sum([ha, hb], 'h')
    return [h, (ha, hb)]


def build_mlp(devices):
    model = model_helper.ModelHelper(name='dp_block_mlp_%s' % devices)
    inputs = (model.net.Relu('a_in', 'a'), [model.net.Relu('b_in', 'b')])
    if devices is None:
        h, (ha, hb) = mlp_block(model, inputs)
    else:
        out = pp.DataParallelBlock(model, mlp_block, inputs, devices)
        assert isinstance(out, list) and isinstance(out[1], tuple)
        h, (ha, hb) = out
    both = model.net.Mul([h, ha], 'both')
    total = model.net.Sum([both, hb], 'total')
    loss = model.net.AveragedLoss(total, 'loss')
    model.AddGradientOperators([loss])
    return model


def test_nested_inputs_and_outputs_on_an_mlp():
    rng = np.random.RandomState(3)
    feeds = {'a_in': rng.randn(5, 4).astype(np.float32),
             'b_in': rng.randn(5, 5).astype(np.float32)}
    results = []
    for devices in (None, [0, 1, 2]):
        model = build_mlp(devices)
        workspace.ResetWorkspace()
        run(model.param_init_net)
        for p in model.GetParams():
            workspace.FeedBlob(str(p), initial_value(str(p), workspace.FetchBlob(str(p)).shape))
        for name, value in feeds.items():
            workspace.FeedBlob(name, value)
        run(model.net)
        names = ['loss', 'h', 'fa', 'fb', 'a_in_grad', 'b_in_grad'] + [
            str(model.param_to_grad[p]) for p in model.GetParams()]
        results.append({n: workspace.FetchBlob(n).copy() for n in names})
    expected, got = results
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


if __name__ == '__main__':
    import sys
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
