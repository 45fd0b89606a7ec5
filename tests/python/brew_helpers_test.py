"""The helpers brew registers from doppio.helpers (Caffe2's
caffe2.python.helpers modules): conv_nd, conv_transpose, group_conv,
elementwise_linear and brew's add_weight_decay build the parameters and
ops Caffe2's do, and their nets compute what numpy does."""
import sys

import numpy as np
import pytest

from doppio import brew, model_helper, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def shapes_after_init(model):
    workspace.RunNetOnce(model.param_init_net)
    return {str(p): workspace.FetchBlob(str(p)).shape for p in model.params}


def test_helper_modules_are_caffe2s():
    from caffe2.python.helpers import conv, fc, train
    assert brew.fc.__wrapped__ is fc.fc
    assert brew.conv_transpose.__wrapped__ is conv.conv_transpose
    assert brew.add_weight_decay.__wrapped__ is train.add_weight_decay


@pytest.mark.parametrize('order', ['NCHW', 'NHWC'])
def test_conv_transpose(order):
    model = model_helper.ModelHelper(name='deconv')
    brew.conv_transpose(model, 'x', 'y', 3, 5, 2, stride=2, order=order)
    # [dim_in, dim_out, k, k] (NCHW) or [dim_in, k, k, dim_out] (NHWC).
    want_w = (3, 5, 2, 2) if order == 'NCHW' else (3, 2, 2, 5)
    assert shapes_after_init(model) == {'y_w': want_w, 'y_b': (5,)}
    x_shape = (1, 3, 4, 4) if order == 'NCHW' else (1, 4, 4, 3)
    workspace.FeedBlob('x', np.ones(x_shape, np.float32))
    workspace.RunNetOnce(model.net)
    y = workspace.FetchBlob('y')
    assert y.shape == ((1, 5, 8, 8) if order == 'NCHW' else (1, 8, 8, 5))
    # Stride 2 with a 2x2 kernel: each output pixel sees one input pixel.
    # Stride 2 with a 2x2 kernel: output pixel (0, 0) sees input pixel (0, 0)
    # through kernel tap (0, 0) only; x = 1 and the bias is 0.
    w = workspace.FetchBlob('y_w')
    taps = w[:, :, 0, 0] if order == 'NCHW' else w[:, 0, 0, :]
    corner = y[0, :, 0, 0] if order == 'NCHW' else y[0, 0, 0, :]
    np.testing.assert_allclose(corner, taps.sum(axis=0), rtol=1e-5)


def test_conv_nd_three_dims_and_group_conv():
    model = model_helper.ModelHelper(name='nd')
    brew.conv_nd(model, 'x', 'y', 4, 6, [1, 2, 2], group=2)
    brew.group_conv(model, 'x2', 'z', 4, 4, 3, group=4, pad=1)
    shapes = shapes_after_init(model)
    assert shapes['y_w'] == (6, 2, 1, 2, 2) and shapes['z_w'] == (4, 1, 3, 3)
    workspace.FeedBlob('x', np.random.RandomState(0).randn(1, 4, 2, 3, 3).astype(np.float32))
    workspace.FeedBlob('x2', np.random.RandomState(1).randn(1, 4, 5, 5).astype(np.float32))
    workspace.RunNetOnce(model.net)
    assert workspace.FetchBlob('y').shape == (1, 6, 2, 2, 2)
    assert workspace.FetchBlob('z').shape == (1, 4, 5, 5)
    with pytest.raises(ValueError, match='NCHW'):
        brew.conv_nd(model, 'x', 'bad', 4, 6, 3, order='NHWC')


def test_elementwise_linear_matches_numpy():
    model = model_helper.ModelHelper(name='affine')
    brew.elementwise_linear(model, 'x', 'y', 3)
    workspace.RunNetOnce(model.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob('y_w'), np.ones(3, np.float32))
    rng = np.random.RandomState(2)
    x, w, b = (rng.randn(*s).astype(np.float32) for s in [(4, 3), (3,), (3,)])
    for name, value in [('x', x), ('y_w', w), ('y_b', b)]:
        workspace.FeedBlob(name, value)
    workspace.RunNetOnce(model.net)
    np.testing.assert_allclose(workspace.FetchBlob('y'), x * w + b, rtol=1e-6)


def test_brew_add_weight_decay_adds_decay_to_weight_gradients():
    model = model_helper.ModelHelper(name='decay')
    brew.fc(model, 'x', 'y', 3, 2)
    model.net.SquaredL2Distance(['y', 'target'], 'dist')
    model.net.AveragedLoss('dist', 'loss')
    model.AddGradientOperators(['loss'])
    plain = model.net.Proto().SerializeToString()
    brew.add_weight_decay(model, 0.25)
    rng = np.random.RandomState(3)
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('x', rng.randn(5, 3).astype(np.float32))
    workspace.FeedBlob('target', rng.randn(5, 2).astype(np.float32))
    from doppio.proto import doppio_pb2
    plain_net = doppio_pb2.NetDef()
    plain_net.ParseFromString(plain)
    workspace.RunNetOnce(plain_net)
    grads = {g: workspace.FetchBlob(g) for g in ['y_w_grad', 'y_b_grad']}
    workspace.RunNetOnce(model.net)
    w = workspace.FetchBlob('y_w')
    np.testing.assert_allclose(workspace.FetchBlob('y_w_grad'), grads['y_w_grad'] + 0.25 * w,
                               rtol=1e-5)
    np.testing.assert_allclose(workspace.FetchBlob('y_b_grad'), grads['y_b_grad'], rtol=1e-6)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
