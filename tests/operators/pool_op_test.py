"""MaxPool / AveragePool / LpPool (1-D to 3-D, NCHW and NHWC, global) and LRN, with
their gradients, through the op harness against numpy."""
import itertools

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

ORDERS = st.sampled_from(["NCHW", "NHWC"])


def to_nchw(x, order):
    return x if order == "NCHW" else np.moveaxis(x, -1, 1)


def from_nchw(x, order):
    return x if order == "NCHW" else np.moveaxis(x, 1, -1)


def pool_reference(x, kind, kernel, stride, pads, order, count_include_pad=False, p=2.0):
    """Direct loops over output positions; pads = begins then ends."""
    x = to_nchw(x.astype(np.float64), order)
    spatial = x.shape[2:]
    nd = len(spatial)
    out = [(spatial[i] + pads[i] + pads[nd + i] - kernel[i]) // stride[i] + 1
           for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out))
    axes = tuple(range(2, 2 + nd))
    for o in itertools.product(*[range(s) for s in out]):
        starts = [o[i] * stride[i] - pads[i] for i in range(nd)]
        window = x[(Ellipsis,) + tuple(slice(max(s, 0), min(s + k, n))
                                       for s, k, n in zip(starts, kernel, spatial))]
        index = (Ellipsis,) + o
        if kind == "Max":
            y[index] = window.max(axis=axes)
        elif kind == "Lp":
            y[index] = (np.abs(window) ** p).sum(axis=axes) ** (1.0 / p)
        else:
            count = np.prod(kernel) if count_include_pad else np.prod(window.shape[2:])
            y[index] = window.sum(axis=axes) / count
    return from_nchw(y, order)


@st.composite
def pool_case(draw, dtype=None):
    """A pooling op with arguments in any of Caffe2's spellings, and its
    input and reference arguments."""
    kind = draw(st.sampled_from(["Max", "Average", "Lp"]))
    nd = draw(st.integers(1, 3))
    order = draw(ORDERS)
    kernel = [draw(st.integers(1, 3)) for _ in range(nd)]
    stride = [draw(st.integers(1, 2)) for _ in range(nd)]
    pads = ([draw(st.integers(0, k - 1)) for k in kernel] +
            [draw(st.integers(0, k - 1)) for k in kernel])
    spatial = []
    for i in range(nd):
        low = max(1, kernel[i] - pads[i] - pads[nd + i])
        spatial.append(draw(st.integers(low, low + 3)))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    shape = [n, c] + spatial if order == "NCHW" else [n] + spatial + [c]
    dtype = dtype or draw(h.float_dtypes)
    x = np.random.RandomState(draw(st.integers(0, 2**31 - 1))).randn(*shape).astype(dtype)
    args = {"order": order}
    uniform = len(set(kernel)) == 1 and len(set(stride)) == 1 and len(set(pads)) == 1
    if uniform and draw(st.booleans()):
        args.update(kernel=kernel[0], stride=stride[0], pad=pads[0])
    elif nd == 2 and draw(st.booleans()):
        args.update(kernel_h=kernel[0], kernel_w=kernel[1], stride_h=stride[0],
                    stride_w=stride[1], pad_t=pads[0], pad_l=pads[1], pad_b=pads[2],
                    pad_r=pads[3])
    else:
        args.update(kernels=kernel, strides=stride, pads=pads)
    include_pad = kind == "Average" and draw(st.booleans())
    if include_pad:
        args["count_include_pad"] = 1
    p = 2.0
    if kind == "Lp":
        p = draw(st.sampled_from([1.0, 2.0, 3.0]))
        args["p"] = p
    # Caffe2 spells out the rank for Max and Average only.
    op_type = kind + "Pool" + ("" if kind == "Lp" else draw(st.sampled_from(["", "%dD" % nd])))
    op = h.make_op(op_type, ["X"], ["Y"], **args)
    reference = lambda x: pool_reference(x, kind, kernel, stride, pads, order, include_pad, p)
    return op, x, reference


@given(pool_case())
def test_pool_matches_numpy(case):
    op, x, reference = case
    h.check_output(op, [x], reference)
    assert h.check_inplace(op, [x]) == 0  # pooling never runs in place


@given(pool_case(dtype=np.float64))
def test_pool_gradient(case):
    op, x, _ = case
    h.check_gradient(op, [x], [0])
    grad_ops, _ = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == [op.type + "Gradient"]
    assert list(grad_ops[0].input) == ["X", "Y", "Y_grad"]


@given(st.sampled_from(["Max", "Average"]), st.integers(1, 3), ORDERS, h.float_dtypes,
       st.integers(0, 2**31 - 1))
def test_global_pooling(kind, nd, order, dtype, seed):
    rng = np.random.RandomState(seed)
    spatial = list(rng.randint(1, 4, nd))
    shape = [2, 3] + spatial if order == "NCHW" else [2] + spatial + [3]
    x = rng.randn(*shape).astype(dtype)
    op = h.make_op(kind + "Pool", ["X"], ["Y"], global_pooling=1, order=order)
    axes = tuple(range(2, 2 + nd)) if order == "NCHW" else tuple(range(1, 1 + nd))
    reduce = np.max if kind == "Max" else np.mean
    h.check_output(op, [x], lambda x: reduce(x.astype(np.float64), axis=axes, keepdims=True))
    h.check_gradient(op, [x.astype(np.float64)], [0])


def max_pool_grad_first_max_reference(x, dy, kernel, stride):
    """NCHW 2-D, no padding: each window's dY goes to the first position (in
    row-major order) holding its maximum, as PyTorch and cuDNN route it."""
    dx = np.zeros_like(x)
    for n, c, oh, ow in itertools.product(*[range(s) for s in dy.shape]):
        window = x[n, c, oh * stride:oh * stride + kernel, ow * stride:ow * stride + kernel]
        i, j = np.unravel_index(np.argmax(window), window.shape)
        dx[n, c, oh * stride + i, ow * stride + j] += dy[n, c, oh, ow]
    return dx


@given(order=ORDERS, kernel=st.integers(2, 3), stride=st.integers(1, 2),
       seed=st.integers(0, 2**31 - 1))
def test_max_pool_gradient_goes_to_the_first_tied_maximum(order, kernel, stride, seed):
    # Few distinct values, so most windows tie (as a flat image background does
    # after Conv + BN + Relu); overlapping windows (stride < kernel) add up.
    rng = np.random.RandomState(seed)
    x = rng.randint(0, 3, size=(2, 3, 7, 6)).astype(np.float32)
    op = h.make_op("MaxPool", ["X"], ["Y"], kernel=kernel, stride=stride, order=order)
    y = h.run_op(op, [from_nchw(x, order)])[0]
    dy = rng.randn(*y.shape).astype(np.float32)
    grad_op = h.gradient_ops(op)[0][0]
    dx = h.run_op(grad_op, [from_nchw(x, order), y, dy])[0]
    expected = max_pool_grad_first_max_reference(x, to_nchw(dy, order), kernel, stride)
    np.testing.assert_allclose(to_nchw(dx, order), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_2x2_planes(dtype):
    # The reference CNN's pooling (2x2, stride 2, no padding) takes its own
    # loops in pool_op.cc, over planes split across the intra-op threads:
    # ties, a NaN, odd sizes (the last row and column are dropped) and enough
    # planes to split, against numpy.
    rng = np.random.RandomState(5)
    x = rng.randint(0, 3, size=(4, 16, 29, 27)).astype(dtype)
    x[1, 3, 4, 6] = np.nan
    op = h.make_op("MaxPool", ["X"], ["Y"], kernel=2, stride=2)
    y = h.run_op(op, [x])[0]
    windows = x[:, :, :28, :26].reshape(4, 16, 14, 2, 13, 2)
    expected = np.full((4, 16, 14, 13), np.finfo(dtype).min, dtype)
    for i, j in itertools.product(range(2), range(2)):
        # std::max(best, v): a NaN never replaces best.
        candidate = windows[:, :, :, i, :, j]
        expected = np.where(candidate > expected, candidate, expected)
    np.testing.assert_array_equal(y, expected)
    dy = rng.randn(*y.shape).astype(dtype)
    dx = h.run_op(h.gradient_ops(op)[0][0], [x, y, dy])[0]
    finite = np.nan_to_num(x, nan=-1.0)
    np.testing.assert_allclose(dx, max_pool_grad_first_max_reference(finite, dy, 2, 2),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel,stride,pads", [
    ((3, 3), (2, 2), (1, 1, 1, 1)),   # ResNet's stem pooling
    ((3, 3), (1, 1), (1, 1, 1, 1)),   # GoogLeNet's inception branch
    ((3, 3), (2, 2), (0, 0, 1, 1)),   # ceil_mode as ONNX exports it
    ((2, 5), (3, 1), (0, 2, 1, 4)),
    ((1, 4), (1, 4), (0, 0, 0, 0)),
])
def test_max_pool_2d_planes(kernel, stride, pads):
    # Every other 2-D max pooling takes the two-pass loops of pool_op.cc
    # (column max over the window's rows, then along the row): against the
    # direct loops of pool_reference, with a NaN skipped as std::max skips it.
    rng = np.random.RandomState(sum(kernel) + sum(pads))
    x = rng.randn(2, 5, 13, 17).astype(np.float32)
    op = h.make_op("MaxPool", ["X"], ["Y"], kernels=list(kernel), strides=list(stride),
                   pads=list(pads))
    def reference(v):
        """Direct loops; a NaN is skipped. (Pads are smaller than the
        kernel, so no window lies wholly in the padding.)"""
        out_h = (13 + pads[0] + pads[2] - kernel[0]) // stride[0] + 1
        out_w = (17 + pads[1] + pads[3] - kernel[1]) // stride[1] + 1
        y = np.zeros((2, 5, out_h, out_w), np.float32)
        for oh, ow in itertools.product(range(out_h), range(out_w)):
            h0, w0 = oh * stride[0] - pads[0], ow * stride[1] - pads[1]
            window = v[:, :, max(h0, 0):min(h0 + kernel[0], 13),
                       max(w0, 0):min(w0 + kernel[1], 17)]
            if window.size:
                y[:, :, oh, ow] = np.nanmax(window.reshape(2, 5, -1), axis=2)
        return y

    expected = reference(x)
    np.testing.assert_array_equal(h.run_op(op, [x])[0], expected)
    x[1, 2, 6, 8] = np.nan
    np.testing.assert_array_equal(h.run_op(op, [x])[0], reference(x))


@pytest.mark.parametrize("nd,kernel,stride,pad,dilation", [
    (1, 3, 2, 1, 2), (2, 2, 1, 1, 2), (2, 3, 2, 1, 3), (3, 2, 1, 1, 2)])
def test_dilated_max_pool_and_indices_match_torch(nd, kernel, stride, pad, dilation):
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(nd + kernel + dilation)
    shape = (2, 3) + (9, 8, 7)[:nd]
    x = rng.randn(*shape).astype(np.float32)
    x[0, 0].flat[:3] = x[0, 0].flat[3]  # ties: the first one (row-major) is the index
    pool = getattr(torch.nn.functional, "max_pool%dd" % nd)
    want, want_index = pool(torch.from_numpy(x), kernel, stride, pad, dilation,
                            return_indices=True)
    op = h.make_op("MaxPool", ["X"], ["Y", "I"], kernels=[kernel] * nd, strides=[stride] * nd,
                   pads=[pad] * 2 * nd, dilations=[dilation] * nd)
    y, index = h.run_op(op, [x])
    np.testing.assert_array_equal(y, want.numpy())
    plane = int(np.prod(shape[2:]))
    offsets = (np.arange(shape[0] * shape[1]) * plane).reshape(shape[:2] + (1,) * nd)
    assert index.dtype == np.int64
    np.testing.assert_array_equal(index - offsets, want_index.numpy())  # torch: in-plane


def test_max_pool_indices_in_column_major_order():
    x = np.arange(2 * 5 * 4, dtype=np.float32).reshape(1, 2, 5, 4)
    op = h.make_op("MaxPool", ["X"], ["Y", "I"], kernel=2, stride=2, storage_order=1)
    y, index = h.run_op(op, [x])
    # Each window's maximum is its bottom-right element (row r, column c of
    # its plane); column-major within the plane: r + 5 * c.
    rows, cols = np.meshgrid([1, 3], [1, 3], indexing="ij")
    want = np.stack([rows + 5 * cols + 20 * p for p in range(2)])[None]
    np.testing.assert_array_equal(index, want)
    np.testing.assert_array_equal(y, x[:, :, 1::2, 1::2])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64])
def test_max_pool_of_integers(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.RandomState(3)
    info = np.iinfo(dtype)
    x = rng.randint(max(info.min, -1000), min(info.max, 1000), (2, 3, 7, 6)).astype(dtype)
    op = h.make_op("MaxPool", ["X"], ["Y"], kernel=3, stride=2, pad=1)
    got = h.run_op(op, [x])[0]
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x.astype(np.float64)), 3, 2, 1)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want.numpy().astype(dtype))


@pytest.mark.parametrize("kind", ["MaxPool", "AveragePool"])
def test_dilated_pool_gradient(kind):
    rng = np.random.RandomState(5)
    x = rng.permutation(2 * 2 * 7 * 6).reshape(2, 2, 7, 6).astype(np.float64) * 0.1
    op = h.make_op(kind, ["X"], ["Y"], kernel=2, stride=1, pad=1, dilation=2)
    h.check_gradient(op, [x], [0])


def test_dilated_average_pool_matches_numpy():
    rng = np.random.RandomState(6)
    x = rng.randn(1, 2, 6, 7)
    op = h.make_op("AveragePool", ["X"], ["Y"], kernel=2, stride=2, pad=1, dilation=2)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    oh, ow = (6 + 2 - 3) // 2 + 1, (7 + 2 - 3) // 2 + 1
    want = np.zeros((1, 2, oh, ow))
    for i in range(oh):
        for j in range(ow):
            taps = padded[:, :, 2 * i:2 * i + 3:2, 2 * j:2 * j + 3:2].reshape(1, 2, -1)
            want[:, :, i, j] = np.nanmean(taps, axis=2)  # padding not counted
    np.testing.assert_allclose(h.run_op(op, [x])[0], want, rtol=1e-12)


def test_pool_bad_inputs():
    x = np.zeros((1, 2, 4, 4), np.float32)
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y"], kernel=2), [np.zeros((2, 4))],
                      "'X'", "3 to 5 dims")
    h.assert_op_error(h.make_op("AveragePool2D", ["X"], ["Y"], kernel=2),
                      [np.zeros((1, 2, 4, 4, 4))], "'X'", "AveragePool2D needs 4 dims")
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y"], kernel=7, pad=1), [x],
                      "larger than the padded input", "'X'")
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y"], kernel=2, pad=2), [x],
                      "smaller than the (dilated) kernel")
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y", "I"], kernel=2, order="NHWC"),
                      [x.transpose(0, 2, 3, 1).copy()], "Indices output 'I'", "NCHW")
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y"], kernel=2, order="HWCN"), [x],
                      "order", "HWCN")
    h.assert_op_error(h.make_op("MaxPool", ["X"], ["Y"]), [x], "kernel")
    h.assert_op_error(h.make_op("AveragePool", ["X"], ["Y"], kernel=2),
                      [x.astype(np.int32)], "'X'", "int32")
    h.assert_op_error(h.make_op("AveragePool", ["X"], ["Y"], kernels=[2, 2, 2]), [x],
                      "kernel", "'X'")
    # The gradient op checks Y and dY against the pooled shape.
    grad = h.make_op("MaxPoolGradient", ["X", "Y", "dY"], ["dX"], kernel=2, stride=2)
    y = np.zeros((1, 2, 2, 2), np.float32)
    h.assert_op_error(grad, [x, y, np.zeros((1, 2, 3, 2), np.float32)], "'dY'")


# ---------------------------------------------------------------------- LRN


def lrn_reference(x, size, alpha, beta, bias, order):
    x = to_nchw(x.astype(np.float64), order)
    half = (size - 1) // 2
    C = x.shape[1]
    scale = np.empty_like(x)
    for c in range(C):
        window = x[:, max(0, c - half):min(C, c + half + 1)]
        scale[:, c] = bias + alpha / size * (window ** 2).sum(axis=1)
    return [from_nchw(x * scale ** -beta, order), from_nchw(scale, order)]


@st.composite
def lrn_case(draw, dtype=None):
    order = draw(ORDERS)
    shape = draw(h.dims(4, 4, 1, 4))
    shape[1 if order == "NCHW" else 3] = draw(st.integers(1, 6))
    dtype = dtype or draw(h.float_dtypes)
    x = np.random.RandomState(draw(st.integers(0, 2**31 - 1))).randn(*shape).astype(dtype)
    args = dict(size=draw(st.sampled_from([1, 3, 5])),
                alpha=_f32(draw(st.floats(0.01, 1.0))),
                beta=_f32(draw(st.floats(0.1, 1.0))),
                bias=_f32(draw(st.floats(0.5, 2.0))), order=order)
    return x, args


def _f32(value):
    return float(np.float32(value))


@given(lrn_case())
def test_lrn_matches_numpy(case):
    x, args = case
    op = h.make_op("LRN", ["X"], ["Y", "Y_scale"], **args)
    h.check_output(op, [x], lambda x: lrn_reference(x, **args))
    single = h.make_op("LRN", ["X"], ["Y"], **args)
    h.check_output(single, [x], lambda x: lrn_reference(x, **args)[0])


@given(lrn_case(dtype=np.float64))
def test_lrn_gradient(case):
    x, args = case
    h.check_gradient(h.make_op("LRN", ["X"], ["Y"], **args), [x], [0])
    grad_ops, _ = h.gradient_ops(h.make_op("LRN", ["X"], ["Y"], **args))
    assert [g.type for g in grad_ops] == ["LRNGradient"]


def test_lrn_bad_inputs():
    x = np.ones((1, 3, 2, 2), np.float32)
    h.assert_op_error(h.make_op("LRN", ["X"], ["Y"], size=2), [x], "size", "odd")
    h.assert_op_error(h.make_op("LRN", ["X"], ["Y"]), [x], "size")
    h.assert_op_error(h.make_op("LRN", ["X"], ["Y"], size=3), [np.ones((3, 2, 2))],
                      "'X'", "4-D")
    h.assert_op_error(h.make_op("LRN", ["X"], ["Y"], size=3, order="nchw"), [x], "order")
    h.assert_op_error(h.make_op("LRN", ["X"], ["Y"], size=3), [x.astype(np.int64)],
                      "'X'", "int64")
    grad = h.make_op("LRNGradient", ["X", "Y", "dY"], ["dX"], size=3)
    h.assert_op_error(grad, [x, x, np.ones((1, 3, 2, 3), np.float32)], "'dY'")


def test_device():
    # Outside @given: check_device skips the whole test without a GPU.
    x = np.random.RandomState(3).randn(2, 3, 5, 4).astype(np.float32)
    for op in [h.make_op("MaxPool", ["X"], ["Y"], kernel=3, stride=2, pad=1),
               h.make_op("AveragePool", ["X"], ["Y"], kernels=[2, 3], order="NHWC"),
               h.make_op("LRN", ["X"], ["Y", "Y_scale"], size=3, alpha=0.1, beta=0.75)]:
        h.check_device(op, [x])


if __name__ == "__main__":
    h.run_main(__file__)
