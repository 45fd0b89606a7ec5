"""optimizer.build_multi_precision_sgd (Caffe2's MultiPrecisionSgdOptimizer)
against numpy: float16 parameters are updated through their float32 master
copies (Nesterov momentum in float32, then a float16 cast); float32
parameters exactly as momentum SGD."""
import sys

import numpy as np
import pytest

from caffe2.python import brew, core, model_helper, optimizer, workspace
from caffe2.python.modeling.initializers import PseudoFP16Initializer

LR, MOMENTUM = 0.1, 0.9


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def nesterov_step(param, moment, grad, lr):
    """Caffe2's MomentumSGDUpdate with nesterov=1 (lr > 0 subtracts)."""
    new_moment = MOMENTUM * moment + lr * grad
    return param - ((1 + MOMENTUM) * new_moment - MOMENTUM * moment), new_moment


def test_float16_parameter_updates_its_float32_master():
    # loss = sum(float(w) * x): the gradient reaching w is float16(x).
    model = model_helper.ModelHelper(name='mp')
    w = model.create_param('w', [3, 4], PseudoFP16Initializer('GaussianFill', std=1.0))
    w32 = model.net.HalfToFloat(w, 'w_as_float')
    product = model.net.Mul([w32, 'x'], 'product')
    model.net.SumElements(product, 'loss')
    model.AddGradientOperators(['loss'])
    optimizer.build_multi_precision_sgd(model, LR, momentum=MOMENTUM, nesterov=1)
    ops = [op.type for op in model.net.Proto().op]
    assert ops[-3:] == ['HalfToFloat', 'MomentumSGDUpdate', 'FloatToHalf']

    workspace.RunNetOnce(model.param_init_net)
    master = workspace.FetchBlob('w_fp32').astype(np.float64)
    assert workspace.FetchBlob('w').dtype == np.float16
    moment = np.zeros_like(master)
    rng = np.random.RandomState(0)
    workspace.FeedBlob('x', np.zeros((3, 4), np.float32))
    workspace.CreateNet(model.net)
    for _ in range(3):
        x = rng.randn(3, 4).astype(np.float32)
        workspace.FeedBlob('x', x)
        workspace.RunNet(model.net)
        grad = x.astype(np.float16).astype(np.float64)
        master, moment = nesterov_step(master, moment, grad, LR)
        np.testing.assert_allclose(workspace.FetchBlob('w_fp32'), master, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(workspace.FetchBlob('w'),
                                      workspace.FetchBlob('w_fp32').astype(np.float16))
        np.testing.assert_allclose(workspace.FetchBlob('w_momentum'), moment, rtol=1e-5,
                                   atol=1e-6)


def test_float32_parameters_take_momentum_sgd():
    model = model_helper.ModelHelper(name='fp32')
    brew.fc(model, 'data', 'fc', 4, 2)
    model.net.SquaredL2Distance(['fc', 'target'], 'dist')
    model.net.AveragedLoss('dist', 'loss')
    model.AddGradientOperators(['loss'])
    optimizer.build_multi_precision_sgd(model, LR, momentum=MOMENTUM)
    assert 'HalfToFloat' not in [op.type for op in model.net.Proto().op]
    workspace.RunNetOnce(model.param_init_net)
    w = workspace.FetchBlob('fc_w').astype(np.float64)
    b = workspace.FetchBlob('fc_b').astype(np.float64)
    moments = [np.zeros_like(w), np.zeros_like(b)]
    rng = np.random.RandomState(1)
    workspace.FeedBlob('data', np.zeros((5, 4), np.float32))
    workspace.FeedBlob('target', np.zeros((5, 2), np.float32))
    workspace.CreateNet(model.net)
    for _ in range(3):
        data = rng.randn(5, 4).astype(np.float32)
        target = rng.randn(5, 2).astype(np.float32)
        workspace.FeedBlob('data', data)
        workspace.FeedBlob('target', target)
        workspace.RunNet(model.net)
        # d/dfc of mean(0.5 * |fc - target|^2) over the batch.
        dfc = (data @ w.T + b - target) / len(data)
        w, moments[0] = nesterov_step(w, moments[0], dfc.T @ data, LR)
        b, moments[1] = nesterov_step(b, moments[1], dfc.sum(axis=0), LR)
        np.testing.assert_allclose(workspace.FetchBlob('fc_w'), w, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(workspace.FetchBlob('fc_b'), b, rtol=1e-4, atol=1e-6)


def test_sparse_gradients_of_float16_parameters_are_refused():
    model = model_helper.ModelHelper(name='sparse_mp')
    emb = model.create_param('emb', [6, 2], PseudoFP16Initializer('ConstantFill', value=1.0))
    rows = model.net.Gather([emb, 'indices'], 'rows')
    model.net.SumElements(model.net.HalfToFloat(rows, 'rows32'), 'loss')
    model.AddGradientOperators(['loss'])
    with pytest.raises(ValueError, match='emb.*sparse'):
        optimizer.build_multi_precision_sgd(model, LR, momentum=MOMENTUM)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
