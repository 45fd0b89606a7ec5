"""AffineChannel and AffineChannelGradient against numpy, finite
differences, both orders, in place, and the error paths."""
import numpy as np
import pytest

import op_harness as h


def _shape(order, c, rank):
    dims = [2, c, 3, 4, 5][:rank]
    return dims if order == "NCHW" else [dims[0]] + dims[2:] + [c]


def _per_channel(a, order, rank):
    return a.reshape([-1] + [1] * (rank - 2)) if order == "NCHW" else a


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("rank", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_affine_channel_matches_numpy(order, rank, dtype):
    rng = np.random.RandomState(rank)
    x = rng.randn(*_shape(order, 6, rank)).astype(dtype)
    s, b = rng.randn(6).astype(dtype), rng.randn(6).astype(dtype)
    want = x * _per_channel(s, order, rank) + _per_channel(b, order, rank)
    op = h.make_op("AffineChannel", ["X", "s", "b"], ["Y"], order=order)
    np.testing.assert_allclose(h.run_op(op, [x, s, b])[0], want, rtol=1e-6)
    in_place = h.make_op("AffineChannel", ["X", "s", "b"], ["X"], order=order)
    np.testing.assert_allclose(h.run_op(in_place, [x, s, b])[0], want, rtol=1e-6)


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("learnable", [False, True])
def test_affine_channel_gradient(order, learnable):
    rng = np.random.RandomState(5)
    x = rng.randn(*_shape(order, 4, 4))
    s, b = rng.randn(4), rng.randn(4)
    dy = rng.randn(*x.shape)
    axes = tuple(i for i in range(4) if i != (1 if order == "NCHW" else 3))
    op = h.make_op("AffineChannel", ["X", "s", "b"], ["Y"], order=order,
                   is_learnable=int(learnable))
    grad_ops, input_grads = h.gradient_ops(op)
    g = grad_ops[0]
    assert g.type == "AffineChannelGradient"
    if learnable:
        assert list(g.input) == ["Y_grad", "X", "s"] and input_grads == ["X_grad", "s_grad",
                                                                         "b_grad"]
        dx, ds, db = h.run_op(g, [dy, x, s])
        np.testing.assert_allclose(ds, (dy * x).sum(axis=axes), rtol=1e-12)
        np.testing.assert_allclose(db, dy.sum(axis=axes), rtol=1e-12)
        h.check_gradient(op, [x, s, b], [0, 1, 2])
    else:
        assert list(g.input) == ["Y_grad", "s"] and input_grads == ["X_grad", None, None]
        dx = h.run_op(g, [dy, s])[0]
        h.check_gradient(op, [x, s, b], [0])
    np.testing.assert_allclose(dx, dy * _per_channel(s, order, 4), rtol=1e-12)


def test_affine_channel_bad_input():
    x = np.ones((2, 3, 4), np.float32)
    op = h.make_op("AffineChannel", ["X", "s", "b"], ["Y"])
    h.assert_op_error(op, [x, np.ones(4, np.float32), np.ones(3, np.float32)], "'s'", "[3]")
    h.assert_op_error(op, [x, np.ones(3, np.float32), np.ones(3, np.float64)], "'b'", "float32")
    h.assert_op_error(op, [np.ones(3, np.float32)] * 3, "'X'", "rank >= 2")
    h.assert_op_error(op, [x.astype(np.int32)] + [np.ones(3, np.int32)] * 2, "int32")
    grad = h.make_op("AffineChannelGradient", ["dY", "s"], ["dX"], is_learnable=1)
    h.assert_op_error(grad, [x, np.ones(3, np.float32)], "is_learnable 1", "(dY, X, scale)")


if __name__ == "__main__":
    h.run_main(__file__)
