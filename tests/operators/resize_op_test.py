"""ResizeNearest and ResizeNearestGradient against numpy (Caffe2's index
formula), torch's nearest interpolation at integer scales, finite
differences, both orders, the scales input and the error paths."""
import numpy as np
import pytest

import op_harness as h


def _sources(out, size, scale):
    q = np.arange(out, dtype=np.float32) / np.float32(scale)
    return np.minimum(q.astype(np.int64), size - 1)


def _reference(x, hs, ws):
    n, c, height, width = x.shape
    rows = _sources(int(np.float32(height) * np.float32(hs)), height, hs)
    cols = _sources(int(np.float32(width) * np.float32(ws)), width, ws)
    return x[:, :, rows][:, :, :, cols], rows, cols


def _nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _nchw(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


SCALES = [(2.0, 2.0), (0.5, 3.0), (1.7, 0.6), (1.0, 1.0), (3.3, 2.5)]


@pytest.mark.parametrize("hs,ws", SCALES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_resize_nearest_matches_numpy(hs, ws, dtype):
    x = np.random.RandomState(1).randn(2, 3, 7, 5).astype(dtype)
    want, _, _ = _reference(x, hs, ws)
    for order in ("NCHW", "NHWC"):
        op = h.make_op("ResizeNearest", ["X"], ["Y"], height_scale=hs, width_scale=ws, order=order)
        got = h.run_op(op, [x if order == "NCHW" else _nhwc(x)])[0]
        np.testing.assert_array_equal(got if order == "NCHW" else _nchw(got), want)
        with_input = h.make_op("ResizeNearest", ["X", "scales"], ["Y"], order=order)
        scales = np.array([hs, ws], np.float32)
        got = h.run_op(with_input, [x if order == "NCHW" else _nhwc(x), scales])[0]
        np.testing.assert_array_equal(got if order == "NCHW" else _nchw(got), want)


def test_resize_nearest_matches_torch_at_integer_scales():
    torch = pytest.importorskip("torch")
    x = np.random.RandomState(2).randn(1, 4, 6, 9).astype(np.float32)
    for scale in (2, 3):
        op = h.make_op("ResizeNearest", ["X"], ["Y"], height_scale=float(scale),
                       width_scale=float(scale))
        want = torch.nn.functional.interpolate(torch.from_numpy(x), scale_factor=scale,
                                               mode="nearest").numpy()
        np.testing.assert_array_equal(h.run_op(op, [x])[0], want)


@pytest.mark.parametrize("hs,ws", SCALES)
def test_resize_nearest_gradient(hs, ws):
    rng = np.random.RandomState(3)
    x = rng.randn(2, 3, 5, 4)
    _, rows, cols = _reference(x, hs, ws)
    dy = rng.randn(2, 3, len(rows), len(cols))
    want = np.zeros_like(x)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            want[:, :, r, c] += dy[:, :, i, j]
    for order in ("NCHW", "NHWC"):
        op = h.make_op("ResizeNearestGradient", ["dY", "X"], ["dX"], height_scale=hs,
                       width_scale=ws, order=order)
        to = (lambda a: a) if order == "NCHW" else _nhwc
        got = h.run_op(op, [to(dy), to(x)])[0]
        np.testing.assert_allclose(got, to(want), rtol=1e-12, atol=1e-12)
        forward = h.make_op("ResizeNearest", ["X"], ["Y"], height_scale=hs, width_scale=ws,
                            order=order)
        h.check_gradient(forward, [to(x)], [0])


def test_resize_nearest_gradient_maker():
    op = h.make_op("ResizeNearest", ["X", "s"], ["Y"], order="NHWC")
    grad_ops, input_grads = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == ["ResizeNearestGradient"]
    assert list(grad_ops[0].input) == ["Y_grad", "X", "s"]
    assert input_grads == ["X_grad", None]


def test_resize_nearest_bad_input():
    x = np.ones((1, 2, 3, 3), np.float32)
    op = h.make_op("ResizeNearest", ["X"], ["Y"], height_scale=0.0)
    h.assert_op_error(op, [x], "height_scale")
    op = h.make_op("ResizeNearest", ["X"], ["Y"], width_scale=float("nan"))
    h.assert_op_error(op, [x], "width_scale")
    op = h.make_op("ResizeNearest", ["X"], ["Y"], width_scale=1e30)
    h.assert_op_error(op, [x], "out of range")
    op = h.make_op("ResizeNearest", ["X", "s"], ["Y"])
    h.assert_op_error(op, [x, np.ones(3, np.float32)], "'s'", "float32 [2]")
    h.assert_op_error(op, [x, np.array([2, -1], np.float32)], "width_scale")
    op = h.make_op("ResizeNearest", ["X"], ["Y"])
    h.assert_op_error(op, [x[0]], "'X'", "4-D")
    h.assert_op_error(op, [x.astype(np.int32)], "'X'", "int32")
    grad = h.make_op("ResizeNearestGradient", ["dY", "X"], ["dX"], height_scale=2.0)
    h.assert_op_error(grad, [np.ones((1, 2, 3, 3), np.float32), x], "'dY'", "[1, 2, 6, 3]")


@pytest.mark.parametrize("scale", [1, 2, 3])
def test_upsample_nearest(scale):
    rng = np.random.RandomState(scale)
    x = rng.randn(2, 3, 4, 5)
    want = x.repeat(scale, axis=2).repeat(scale, axis=3)
    op = h.make_op("UpsampleNearest", ["X"], ["Y"], scale=scale)
    np.testing.assert_array_equal(h.run_op(op, [x])[0], want)
    np.testing.assert_array_equal(h.run_op(op, [x.astype(np.float32)])[0],
                                  want.astype(np.float32))
    dy = rng.randn(*want.shape)
    grad = h.make_op("UpsampleNearestGradient", ["X", "dY"], ["dX"], scale=scale)
    summed = dy.reshape(2, 3, 4, scale, 5, scale).sum(axis=(3, 5))
    np.testing.assert_allclose(h.run_op(grad, [x, dy])[0], summed, rtol=1e-12)
    h.check_gradient(op, [x], [0])
    grad_ops, _ = h.gradient_ops(op)
    assert grad_ops[0].type == "UpsampleNearestGradient"
    assert list(grad_ops[0].input) == ["X", "Y_grad"]


def test_upsample_nearest_bad_input():
    x = np.ones((1, 2, 3, 3), np.float32)
    h.assert_op_error(h.make_op("UpsampleNearest", ["X"], ["Y"], scale=0), [x], "scale 0")
    h.assert_op_error(h.make_op("UpsampleNearest", ["X"], ["Y"]), [x[0]], "'X'", "4-D")
    grad = h.make_op("UpsampleNearestGradient", ["X", "dY"], ["dX"])
    h.assert_op_error(grad, [x, np.ones((1, 2, 3, 3), np.float32)], "'dY'", "[1, 2, 6, 6]")


if __name__ == "__main__":
    h.run_main(__file__)
