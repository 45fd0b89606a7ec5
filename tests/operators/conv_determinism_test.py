"""oneDNN Conv and ConvGradient give bit-identical results whichever thread
runs them.

The dag executor runs an op on whichever worker is free, so an op's oneDNN
primitives are often created on one thread and run on another. With
oneDNN's default (library-managed, per-thread) scratchpad such a primitive
would use the other thread's buffer, and ConvGradient's outputs then varied
in the last bits from run to run (or read memory another op was using).
Equality across runs is the property under test, so the reference here is
the first run; the ops' values themselves are checked against numpy in
conv_op_test.py.
"""
import threading
import zlib

import numpy as np

from doppio import brew, model_helper, optimizer, workspace

BATCH = 4
STEPS = 3
RUNS = 5


def _initial_value(name, shape):
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if name.endswith('_s'):  # SpatialBN scale
        return (1.0 + 0.1 * rng.randn(*shape)).astype(np.float32)
    return (0.1 * rng.randn(*shape)).astype(np.float32)


def _reference_cnn(model):
    """python_api/examples/fmnist_train.py's add_reference_cnn and loss."""
    conv1 = brew.conv(model, 'data', 'conv1', dim_in=1, dim_out=32, kernel=3, pad=1)
    bn1 = brew.spatial_bn(model, conv1, 'bn1', 32, epsilon=1e-5, momentum=0.9, is_test=0)
    relu1 = brew.relu(model, bn1, bn1)
    pool1 = brew.max_pool(model, relu1, 'pool1', kernel=2, stride=2)
    conv2 = brew.conv(model, pool1, 'conv2', dim_in=32, dim_out=64, kernel=3, pad=1)
    bn2 = brew.spatial_bn(model, conv2, 'bn2', 64, epsilon=1e-5, momentum=0.9, is_test=0)
    relu2 = brew.relu(model, bn2, bn2)
    pool2 = brew.max_pool(model, relu2, 'pool2', kernel=2, stride=2)
    fc3 = brew.fc(model, pool2, 'fc3', dim_in=64 * 7 * 7, dim_out=128)
    relu3 = brew.relu(model, fc3, fc3)
    pred = brew.fc(model, relu3, 'pred', dim_in=128, dim_out=10)
    softmax = brew.softmax(model, pred, 'softmax')
    xent = model.net.LabelCrossEntropy([softmax, 'label'], 'xent')
    return model.net.AveragedLoss(xent, 'loss')


def _train_reference_cnn(num_workers):
    """STEPS momentum-SGD steps from fixed parameters on fixed data; returns
    every parameter, momentum and gradient blob afterwards."""
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='conv_determinism_cnn')
    loss = _reference_cnn(model)
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=0.05, policy='fixed', momentum=0.9,
                        nesterov=False)
    net = model.net.Proto()
    net.type = 'dag'
    net.arg.add(name='num_workers', i=num_workers)

    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net)
    for param in model.params:
        name = str(param)
        workspace.FeedBlob(name, _initial_value(name, workspace.FetchBlob(name).shape))
    rng = np.random.RandomState(11)
    data = [(rng.randn(BATCH, 1, 28, 28).astype(np.float32),
             rng.randint(0, 10, size=BATCH).astype(np.int32)) for _ in range(STEPS)]
    workspace.FeedBlob('data', data[0][0])
    workspace.FeedBlob('label', data[0][1])
    workspace.CreateNet(net, overwrite=True)
    for x, y in data:
        workspace.FeedBlob('data', x)
        workspace.FeedBlob('label', y)
        workspace.RunNet(net.name)
    return {name: workspace.FetchBlob(name) for name in workspace.Blobs()
            if name.endswith(('_w', '_b', '_s', '_grad', '_momentum'))}


def _assert_runs_equal(first, other, what):
    assert sorted(first) == sorted(other), what
    for name in first:
        np.testing.assert_array_equal(other[name], first[name],
                                      err_msg='%s: blob %s' % (what, name))


def test_reference_cnn_under_dag_is_bit_reproducible():
    for workers in (2, 3):
        first = _train_reference_cnn(workers)
        assert 'conv1_w_grad' in first and 'conv1_w_momentum' in first
        for run in range(1, RUNS):
            _assert_runs_equal(first, _train_reference_cnn(workers),
                               '%d workers, run %d against run 0' % (workers, run))


def _conv_net(name, channels, filters):
    model = model_helper.ModelHelper(name=name)
    out = model.net.Conv(['x', 'w', 'b'], 'y', kernel=3, pad=1)
    loss = model.net.AveragedLoss(model.net.Sigmoid(out, 'sig'), 'loss')
    model.AddGradientOperators([loss])
    return model.net.Proto(), (channels, filters)


def _feed_conv_inputs(shape, seed):
    channels, filters = shape
    rng = np.random.RandomState(seed)
    workspace.FeedBlob('x', rng.randn(BATCH, channels, 14, 14).astype(np.float32))
    workspace.FeedBlob('w', rng.randn(filters, channels, 3, 3).astype(np.float32))
    workspace.FeedBlob('b', rng.randn(filters).astype(np.float32))


def _run_conv_net(net, shape, seed):
    _feed_conv_inputs(shape, seed)
    workspace.RunNet(net.name)
    return {name: workspace.FetchBlob(name) for name in ('y', 'w_grad', 'b_grad', 'x_grad')}


def test_conv_primitives_created_on_one_thread_run_on_another():
    """The simple executor runs ops on the calling thread, so running one net
    first from a helper thread and then from this one moves its primitives
    between threads, as the dag executor's workers do."""
    workspace.ResetWorkspace()
    small, small_shape = _conv_net('conv_small', 1, 4)
    large, large_shape = _conv_net('conv_large', 32, 64)
    _feed_conv_inputs(large_shape, 0)
    workspace.CreateNet(small, overwrite=True)
    workspace.CreateNet(large, overwrite=True)
    expected = {}

    def first_runs():
        expected['large'] = _run_conv_net(large, large_shape, 1)
        expected['small'] = _run_conv_net(small, small_shape, 2)

    helper = threading.Thread(target=first_runs)
    helper.start()
    helper.join()
    # This thread has run no convolution yet; then only the small one.
    for _ in range(2):
        _assert_runs_equal(expected['large'], _run_conv_net(large, large_shape, 1),
                           'large conv moved to another thread')
        _assert_runs_equal(expected['small'], _run_conv_net(small, small_shape, 2),
                           'small conv moved to another thread')


if __name__ == "__main__":
    import sys

    import pytest
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
