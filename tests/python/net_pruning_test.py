"""doppio.net_pruning: a 2-layer MLP on StopGradient(data) loses the first
FCGradient's unread input gradient and nothing else, and the pruned net's
parameter gradients still match a numpy reference."""
import sys

import numpy as np
import pytest

from doppio import brew, model_helper, net_pruning, workspace

BATCH, IN, HIDDEN, OUT = 4, 6, 5, 3


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def build_mlp():
    model = model_helper.ModelHelper(name='pruning_mlp')
    data = model.net.StopGradient('data_in', 'data')
    fc1 = brew.fc(model, data, 'fc1', dim_in=IN, dim_out=HIDDEN)
    relu = brew.relu(model, fc1, 'relu1')
    fc2 = brew.fc(model, relu, 'fc2', dim_in=HIDDEN, dim_out=OUT)
    loss = model.net.SumElements(fc2, 'loss')
    model.AddGradientOperators([loss])
    return model


def fc_gradients(model):
    return [op for op in model.net.Proto().op if op.type == 'FCGradient']


def test_only_the_unread_input_gradient_goes():
    model = build_mlp()
    fc2_grad, fc1_grad = fc_gradients(model)
    assert list(fc1_grad.output) == ['fc1_w_grad', 'fc1_b_grad', 'data_grad']
    assert list(fc2_grad.output) == ['fc2_w_grad', 'fc2_b_grad', 'relu1_grad']
    removed = net_pruning.prune_unread_gradient_outputs(model.net.Proto())
    assert removed == ['data_grad']
    fc2_grad, fc1_grad = fc_gradients(model)
    assert list(fc1_grad.output) == ['fc1_w_grad', 'fc1_b_grad']
    # relu1_grad feeds ReluGradient: kept.
    assert list(fc2_grad.output) == ['fc2_w_grad', 'fc2_b_grad', 'relu1_grad']


def test_external_outputs_count_as_read():
    model = build_mlp()
    model.net.Proto().external_output.append('data_grad')
    assert net_pruning.prune_unread_gradient_outputs(model.net.Proto()) == []


def test_pruned_net_computes_the_same_parameter_gradients():
    model = build_mlp()
    net_pruning.prune_unread_gradient_outputs(model.net.Proto())
    rng = np.random.RandomState(3)
    x = rng.randn(BATCH, IN).astype(np.float32)
    workspace.FeedBlob('data_in', x)
    workspace.RunNetOnce(model.param_init_net)
    w1, b1 = workspace.FetchBlob('fc1_w'), workspace.FetchBlob('fc1_b')
    w2 = workspace.FetchBlob('fc2_w')
    workspace.RunNetOnce(model.net)
    assert not workspace.HasBlob('data_grad')
    # numpy: loss = sum(relu(x W1^T + b1) W2^T + b2).
    h = x.astype(np.float64) @ w1.T + b1
    mask = (h > 0).astype(np.float64)
    d_fc1 = np.ones((BATCH, OUT)) @ w2 * mask
    np.testing.assert_allclose(workspace.FetchBlob('fc1_w_grad'), d_fc1.T @ x, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob('fc1_b_grad'), d_fc1.sum(axis=0),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob('fc2_w_grad'),
                               np.ones((OUT, BATCH)) @ np.maximum(h, 0), rtol=1e-5, atol=1e-5)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
