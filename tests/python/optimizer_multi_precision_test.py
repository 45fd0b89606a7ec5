"""optimizer.build_multi_precision_sgd (Caffe2's MultiPrecisionSgdOptimizer)
against numpy: float16 parameters are updated through their float32 master
copies (Nesterov momentum in float32, then a float16 cast); float32
parameters exactly as momentum SGD. build_multi_precision_adam the same way
with Adam; build_fp16_sgd (Caffe2's FP16SgdOptimizer) updating the float16
parameter itself, weight decay folded in, and the float32 ones in float32."""
import sys

import numpy as np
import pytest

from caffe2.python import brew, model_helper, optimizer, workspace
from caffe2.python.modeling.initializers import Initializer, PseudoFP16Initializer

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


def half_param_model(name):
    """loss = sum(float(w) * x) over a float16 w with a float32 master, and
    a float32 `spatbn_s` (as SpatialBN's scale in Caffe2's float16 models)
    with loss term sum(spatbn_s * y)."""
    model = model_helper.ModelHelper(name=name)
    w = model.create_param('w', [3, 4], PseudoFP16Initializer('GaussianFill', std=1.0))
    s = model.create_param('spatbn_s', [4], Initializer('ConstantFill', value=0.5))
    w32 = model.net.HalfToFloat(w, 'w_as_float')
    total = model.net.Sum([model.net.SumElements(model.net.Mul([w32, 'x'], 'wx'), 'lw'),
                           model.net.SumElements(model.net.Mul([s, 'y'], 'sy'), 'ls')], 'loss')
    model.AddGradientOperators([total])
    return model


def run_steps(model, steps, rng):
    """Feeds each step's (x, y), yields them for the reference to use, then
    runs the step."""
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('x', np.zeros((3, 4), np.float32))
    workspace.FeedBlob('y', np.zeros(4, np.float32))
    workspace.CreateNet(model.net)
    for _ in range(steps):
        x, y = rng.randn(3, 4).astype(np.float32), rng.randn(4).astype(np.float32)
        workspace.FeedBlob('x', x)
        workspace.FeedBlob('y', y)
        yield x, y
        workspace.RunNet(model.net)


def test_multi_precision_adam_updates_float32_master_and_moments():
    model = half_param_model('mp_adam')
    optimizer.build_multi_precision_adam(model, 0.01, beta1=0.9, beta2=0.999, epsilon=1e-8)
    state = None
    for t, (x, _) in enumerate(run_steps(model, 4, np.random.RandomState(2))):
        if state is None:
            master = workspace.FetchBlob('w_fp32').astype(np.float64)
            state = [master, np.zeros_like(master), np.zeros_like(master)]
        # Caffe2's Adam: m, v, then param += lr * correction * m / (sqrt(v) + eps),
        # corrected at t = iteration + 1, the iteration counted before it (1 first).
        grad = x.astype(np.float16).astype(np.float64)
        master, m, v = state
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        correction = np.sqrt(1 - 0.999 ** (t + 2)) / (1 - 0.9 ** (t + 2))
        master = master - 0.01 * correction * m / (np.sqrt(v) + 1e-8)
        state = [master, m, v]
    np.testing.assert_allclose(workspace.FetchBlob('w_fp32'), state[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob('w_fp32_first_moment'), state[1], rtol=1e-5,
                               atol=1e-7)
    assert workspace.FetchBlob('w_fp32_second_moment').dtype == np.float32
    np.testing.assert_array_equal(workspace.FetchBlob('w'),
                                  workspace.FetchBlob('w_fp32').astype(np.float16))


def test_fp16_sgd_updates_the_float16_param_and_spatbn_in_float32():
    model = half_param_model('fp16_sgd')
    optimizer.build_fp16_sgd(model, LR, momentum=MOMENTUM, nesterov=1, weight_decay=1e-2)
    ops = [op.type for op in model.net.Proto().op]
    assert ops.count('FP16MomentumSGDUpdate') == 1 and ops.count('FP32MomentumSGDUpdate') == 1
    state = None
    for x, y in run_steps(model, 3, np.random.RandomState(4)):
        if state is None:
            w = workspace.FetchBlob('w').astype(np.float32)
            s = workspace.FetchBlob('spatbn_s').astype(np.float32)
            state = dict(w=w, mw=np.zeros_like(w), s=s, ms=np.zeros_like(s))
        for key, grad in [('w', x.astype(np.float16).astype(np.float32)),
                          ('s', y)]:
            p, m = state[key], state['m' + key]
            g = grad + np.float32(1e-2) * p
            m_new = np.float32(MOMENTUM) * m + np.float32(LR) * g
            step = (1 + np.float32(MOMENTUM)) * m_new - np.float32(MOMENTUM) * m
            p = p - step
            if key == 'w':  # float16 blobs: each result rounded once
                p, m_new = (v.astype(np.float16).astype(np.float32) for v in (p, m_new))
            state[key], state['m' + key] = p, m_new
    w, s = workspace.FetchBlob('w'), workspace.FetchBlob('spatbn_s')
    assert w.dtype == np.float16 and workspace.FetchBlob('w_momentum').dtype == np.float16
    np.testing.assert_allclose(w.astype(np.float32), state['w'], rtol=2e-3, atol=2e-3)
    assert s.dtype == np.float32
    assert workspace.FetchBlob('spatbn_s_momentum_fp32').dtype == np.float32
    np.testing.assert_allclose(s, state['s'], rtol=1e-5, atol=1e-6)


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
