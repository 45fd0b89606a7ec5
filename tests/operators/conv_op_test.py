"""Conv, ConvGradient, ConvTranspose and ConvTransposeGradient against numpy.

The references below slide explicit windows over a zero-padded input (and,
for the transposed op, scatter every input value times the filter onto the
output), so they share nothing with the im2col + GEMM or oneDNN code paths.
"""
import itertools

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h
from doppio import workspace
from doppio.proto import doppio_pb2


# ------------------------------------------------------------------ references


def _to_channels_first(array, order):
    return np.moveaxis(array, -1, 1) if order == "NHWC" else array


def _from_channels_first(array, order):
    return np.moveaxis(array, 1, -1) if order == "NHWC" else array


def conv_reference(x, w, b, stride, pads, dilation, group, order):
    """Direct N-d convolution (cross-correlation) in float64."""
    x = _to_channels_first(x, order).astype(np.float64)
    w = _to_channels_first(w, order).astype(np.float64)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    m = w.shape[0]
    kernel = w.shape[2:]
    padded = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[nd + i]) for i in range(nd)])
    out = [(padded.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
           for i in range(nd)]
    y = np.zeros((n, m) + tuple(out))
    cg, mg = c // group, m // group
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg]
        for pos in itertools.product(*[range(o) for o in out]):
            window = tuple(
                slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (kernel[i] - 1) + 1,
                      dilation[i]) for i in range(nd))
            patch = padded[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + pos] = np.tensordot(
                patch, wg, axes=(list(range(1, nd + 2)), list(range(1, nd + 2))))
    if b is not None:
        y += b.reshape((1, m) + (1,) * nd)
    return _from_channels_first(y, order)


def conv_transpose_reference(x, w, b, stride, pads, adj, dilation, group, order):
    """Scatters x[n, c, pos] * w[c, :, ...] onto the output, then crops."""
    x = _to_channels_first(x, order).astype(np.float64)
    w = _to_channels_first(w, order).astype(np.float64)
    nd = x.ndim - 2
    n, c = x.shape[:2]
    mg = w.shape[1]
    kernel = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + adj[i]
            for i in range(nd)]
    y = np.zeros((n, mg * group) + tuple(full))
    cg = c // group
    for g in range(group):
        wg = w[g * cg:(g + 1) * cg]
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            window = tuple(
                slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (kernel[i] - 1) + 1,
                      dilation[i]) for i in range(nd))
            values = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + window] += np.tensordot(
                values, wg, axes=([1], [0]))
    crop = tuple(slice(pads[i], full[i] - pads[nd + i]) for i in range(nd))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * nd)
    return _from_channels_first(y, order)


# ------------------------------------------------------------------ strategies


def _draw_layout(draw, max_spatial, small):
    """What Conv and ConvTranspose cases share: rank, order, groups, channels
    per group (input, output), kernel and stride."""
    nd = draw(st.integers(1, max_spatial))
    order = draw(st.sampled_from(["NCHW", "NHWC"]))
    group = draw(st.sampled_from([1, 1, 2]))
    cg = draw(st.integers(1, 2))
    mg = draw(st.integers(1, 2))
    max_kernel = 2 if (nd == 3 or small) else 3
    kernel = [draw(st.integers(1, max_kernel)) for _ in range(nd)]
    stride = [draw(st.integers(1, 2)) for _ in range(nd)]
    return nd, order, group, cg, mg, kernel, stride


def _channels_placed(order, lead, channels, spatial):
    """[lead, channels, spatial...] (NCHW) or [lead, spatial..., channels]."""
    if order == "NCHW":
        return [lead, channels] + spatial
    return [lead] + spatial + [channels]


@st.composite
def conv_cases(draw, max_spatial=3, small=False):
    """A random convolution: shapes, arguments (in one of Caffe2's argument
    spellings) and the per-axis values the reference needs."""
    nd, order, group, cg, mg, kernel, stride = _draw_layout(draw, max_spatial, small)
    dilation = [draw(st.integers(1, 2)) for _ in range(nd)]
    pads = [draw(st.integers(0, 2)) for _ in range(2 * nd)]
    sizes = []
    for i in range(nd):
        reach = dilation[i] * (kernel[i] - 1) + 1
        low = max(1, reach - pads[i] - pads[nd + i])
        high = low + (1 if nd == 3 or small else 3)
        sizes.append(draw(st.integers(low, high)))
    batch = draw(st.integers(1, 2))
    has_bias = draw(st.booleans())
    c, m = cg * group, mg * group
    x_shape = _channels_placed(order, batch, c, sizes)
    w_shape = _channels_placed(order, m, cg, kernel)

    args = {"order": order}
    if group != 1 or draw(st.booleans()):
        args["group"] = group
    spelling = draw(st.sampled_from(["repeated", "scalar", "hw"]))
    if spelling == "hw" and nd == 2:
        args.update(kernel_h=kernel[0], kernel_w=kernel[1], stride_h=stride[0],
                    stride_w=stride[1], pad_t=pads[0], pad_l=pads[1], pad_b=pads[2],
                    pad_r=pads[3], dilation_h=dilation[0], dilation_w=dilation[1])
    else:
        # Scalar spellings only where every axis agrees; otherwise lists.
        for scalar, plural, values in (("kernel", "kernels", kernel),
                                       ("stride", "strides", stride),
                                       ("pad", "pads", pads),
                                       ("dilation", "dilations", dilation)):
            if spelling == "scalar" and len(set(values)) == 1:
                args[scalar] = values[0]
            elif scalar == "kernel" and draw(st.booleans()):
                pass  # Conv infers the kernel from the filter
            else:
                args[plural] = values
    return dict(nd=nd, order=order, group=group, kernel=kernel, stride=stride,
                dilation=dilation, pads=pads, x_shape=x_shape, w_shape=w_shape,
                has_bias=has_bias, m=m, args=args)


def _inputs(data, case, dtype):
    x = data.draw(h.arrays(tuple(case["x_shape"]), dtype))
    w = data.draw(h.arrays(tuple(case["w_shape"]), dtype))
    inputs = [x, w]
    if case["has_bias"]:
        inputs.append(data.draw(h.arrays((case["m"],), dtype)))
    return inputs


def _conv_op(case, engine=None, op_type="Conv"):
    names = ["X", "w", "b"][:3 if case["has_bias"] else 2]
    return h.make_op(op_type, names, ["Y"], engine=engine, **case["args"])


def _conv_ref(case):
    def reference(x, w, b=None):
        return conv_reference(x, w, b, case["stride"], case["pads"], case["dilation"],
                              case["group"], case["order"])
    return reference


# --------------------------------------------------------------------- Conv


@given(conv_cases(), h.float_dtypes, st.data())
def test_conv_matches_numpy(case, dtype, data):
    inputs = _inputs(data, case, dtype)
    for engine in (None, "IM2COL", "DNNL"):
        op = _conv_op(case, engine)
        h.check_output(op, inputs, _conv_ref(case), output_dtypes=[dtype],
                       atol=1e-4 if dtype == np.float32 else 1e-10,
                       rtol=1e-4 if dtype == np.float32 else 1e-10)


@h.requires_cuda
@given(conv_cases(), h.float_dtypes, st.data())
def test_conv_cuda_matches_cpu(case, dtype, data):
    # Pads cuDNN cannot take (begin != end) run the CPU kernel on the op's
    # behalf (the CUDA fallback); the outputs must agree either way.
    h.check_device(_conv_op(case), _inputs(data, case, dtype), atol=1e-3, rtol=1e-3)


@given(conv_cases(max_spatial=2, small=True), st.data())
def test_conv_gradient(case, data):
    inputs = _inputs(data, case, np.float64)
    h.check_gradient(_conv_op(case), inputs, list(range(len(inputs))))


@given(conv_cases(max_spatial=3, small=True), st.data())
def test_conv_gradient_float32_paths_agree(case, data):
    """float32 gradients (oneDNN by default) against the float64 im2col path."""
    inputs = _inputs(data, case, np.float32)
    op = _conv_op(case)
    grad_ops, input_grads = h.gradient_ops(op)
    results = []
    for dtype, engine in ((np.float32, None), (np.float64, "IM2COL")):
        typed = [x.astype(dtype) for x in inputs]
        y = h.run_op(_conv_op(case, engine), typed)[0]
        dy = np.linspace(-1, 1, y.size).reshape(y.shape).astype(dtype)
        grad_op = grad_ops[0]
        grad_op.engine = engine or ""
        outputs = h.run_op(grad_op, typed[:2] + [dy])
        results.append(outputs)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("op_type,rank", [("Conv1D", 3), ("Conv2D", 4), ("Conv3D", 5)])
def test_conv_aliases(op_type, rank):
    rng = np.random.RandomState(rank)
    x = rng.uniform(-1, 1, (2, 3) + (4,) * (rank - 2))
    w = rng.uniform(-1, 1, (2, 3) + (2,) * (rank - 2))
    b = rng.uniform(-1, 1, (2,))
    op = h.make_op(op_type, ["X", "w", "b"], ["Y"], kernel=2, stride=2, pad=1)
    nd = rank - 2
    h.check_output(op, [x, w, b], lambda x, w, b: conv_reference(
        x, w, b, [2] * nd, [1] * (2 * nd), [1] * nd, 1, "NCHW"))
    h.check_gradient(op, [x, w, b], [0, 1, 2])


def test_conv_reference_cnn_shape_float32():
    """The reference CNN's second layer shape: every backend agrees with numpy."""
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (4, 32, 14, 14)).astype(np.float32)
    w = rng.uniform(-0.1, 0.1, (64, 32, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (64,)).astype(np.float32)
    want = conv_reference(x, w, b, [1, 1], [1] * 4, [1, 1], 1, "NCHW")
    for engine in (None, "IM2COL"):
        op = h.make_op("Conv", ["X", "w", "b"], ["Y"], kernel=3, pad=1, engine=engine)
        got = h.run_op(op, [x, w, b])[0]
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("group", [1, 16])
def test_conv_training_mode_0_matches_numpy(group):
    """Caffe2 ideep's training_mode 0 (set by the inference passes) runs an
    inference primitive, whose layouts may differ; the values may not."""
    rng = np.random.RandomState(group)
    x = rng.uniform(-1, 1, (8, 16, 14, 14)).astype(np.float32)
    w = rng.uniform(-0.2, 0.2, (32, 16 // group, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (32,)).astype(np.float32)
    want = conv_reference(x, w, b, [1, 1], [1] * 4, [1, 1], group, "NCHW")
    for order in ("NCHW", "NHWC"):
        xs, ws = (x, w) if order == "NCHW" else (x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1))
        op = h.make_op("Conv", ["X", "w", "b"], ["Y"], kernel=3, pad=1, group=group,
                       order=order, training_mode=0)
        got = h.run_op(op, [np.ascontiguousarray(xs), np.ascontiguousarray(ws), b])[0]
        if order == "NHWC":
            got = got.transpose(0, 3, 1, 2)
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("algorithm", [0, 1, 2])
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape", [(4, 32, 8, 8), (2, 64, 5, 7), (2, 24, 9, 9)])
def test_conv_algorithm_matches_numpy(algorithm, order, shape):
    """conv_algorithm 0 (auto), 1 (Winograd) and 2 (direct), for training
    and inference (training_mode 0, whose filter is kept transformed): shapes
    Winograd takes on AVX-512 and one it cannot (24 channels), forward and
    gradients, against numpy and the float64 im2col path."""
    rng = np.random.RandomState(shape[1] + algorithm)
    n, c, height, width = shape
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    w = rng.uniform(-0.2, 0.2, (c, c, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (c,)).astype(np.float32)
    dy = rng.uniform(-1, 1, shape).astype(np.float32)
    want = conv_reference(x, w, b, [1, 1], [1] * 4, [1, 1], 1, "NCHW")
    grad64 = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], kernel=3, pad=1,
                       engine="IM2COL")
    want_grads = h.run_op(grad64, [a.astype(np.float64) for a in (x, w, dy)])
    nhwc = order == "NHWC"
    to_order = (lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1))) if nhwc else (lambda a: a)
    from_order = (lambda a: a.transpose(0, 3, 1, 2)) if nhwc else (lambda a: a)
    for mode in ({}, {"training_mode": 0}):
        op = h.make_op("Conv", ["X", "w", "b"], ["Y"], kernel=3, pad=1, order=order,
                       conv_algorithm=algorithm, **mode)
        got = h.run_op(op, [to_order(x), to_order(w), b])[0]
        np.testing.assert_allclose(from_order(got), want, atol=1e-4, rtol=1e-4)
    grad = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], kernel=3, pad=1,
                     order=order, conv_algorithm=algorithm)
    dw, db, dx = h.run_op(grad, [to_order(x), to_order(w), to_order(dy)])
    np.testing.assert_allclose(from_order(dw), want_grads[0], atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(db, want_grads[1], atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(from_order(dx), want_grads[2], atol=1e-4, rtol=1e-4)


def test_conv_inference_filter_follows_a_fed_filter():
    """training_mode 0 keeps the filter in oneDNN's layout between runs (a
    Winograd transform where that runs); a filter fed anew is used."""
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (2, 32, 8, 8)).astype(np.float32)
    net = doppio_pb2.NetDef(name="conv_fed_filter", external_input=["X", "w"])
    net.op.append(h.make_op("Conv", ["X", "w"], ["Y"], kernel=3, pad=1, training_mode=0))
    with h._FreshWorkspace():
        workspace.FeedBlob("X", x)
        for seed in range(3):
            w = np.random.RandomState(seed).uniform(-0.2, 0.2, (32, 32, 3, 3)).astype(np.float32)
            workspace.FeedBlob("w", w)
            if seed == 0:
                workspace.CreateNet(net)
            workspace.RunNet(net.name)
            want = conv_reference(x, w, None, [1, 1], [1] * 4, [1, 1], 1, "NCHW")
            np.testing.assert_allclose(workspace.FetchBlob("Y"), want, atol=1e-4, rtol=1e-4)


def test_conv_algorithm_bad_value():
    op = h.make_op("Conv", ["X", "w"], ["Y"], kernel=3, conv_algorithm=3)
    h.assert_op_error(op, [np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 3, 3), np.float32)],
                      "conv_algorithm 3", "0 (auto)")


@pytest.mark.parametrize("channels", [1, 3])
def test_conv_first_layer_gradient_float32(channels):
    """The reference CNN's first layer (few input channels, where oneDNN's
    data gradient runs on our own layout) against numpy's gradients."""
    rng = np.random.RandomState(channels)
    x = rng.uniform(-1, 1, (3, channels, 28, 28)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, channels, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (32,)).astype(np.float32)
    dy = rng.uniform(-1, 1, (3, 32, 28, 28))
    # Y[n,m,h,w] = sum_{c,i,j} W[m,c,i,j] X[n,c,h+i-1,w+j-1] + b[m]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dyp = np.pad(dy, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want_dw = np.zeros(w.shape)
    want_dx = np.zeros(x.shape)
    for i in range(3):
        for j in range(3):
            want_dw[:, :, i, j] = np.einsum("nmhw,nchw->mc", dy, xp[:, :, i:i + 28, j:j + 28])
            want_dx += np.einsum("mc,nmhw->nchw", w[:, :, i, j].astype(np.float64),
                                 dyp[:, :, 2 - i:30 - i, 2 - j:30 - j])
    op = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], kernel=3, pad=1)
    dw, db, dx = h.run_op(op, [x, w, dy.astype(np.float32)])
    np.testing.assert_allclose(dw, want_dw, atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(db, dy.sum(axis=(0, 2, 3)), atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(dx, want_dx, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape,stride,pad,dilation", [
    ((64, 960, 2, 2), 1, 1, 1),   # MobileNetV2's last stage at 64x64 (oneDNN's GEMM fallback)
    ((8, 32, 7, 7), 2, 1, 1),
    ((4, 16, 9, 9), 1, 2, 2),
    ((2, 24, 5, 6), 1, 0, 1)])
def test_depthwise_conv_gradient_float32(shape, stride, pad, dilation):
    """Depthwise (group = channels) weight, bias and data gradients against
    numpy, whichever of oneDNN's kernels or our own loop computes dW."""
    rng = np.random.RandomState(shape[1])
    n, c, height, width = shape
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    w = rng.uniform(-1, 1, (c, 1, 3, 3)).astype(np.float32)
    oh = (height + 2 * pad - dilation * 2 - 1) // stride + 1
    ow = (width + 2 * pad - dilation * 2 - 1) // stride + 1
    dy = rng.uniform(-1, 1, (n, c, oh, ow)).astype(np.float32)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    want_dw = np.zeros(w.shape)
    for i in range(3):
        for j in range(3):
            window = xp[:, :, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                        j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
            want_dw[:, 0, i, j] = np.einsum("nchw,nchw->c", dy.astype(np.float64), window)
    op = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], kernel=3, pad=pad,
                   stride=stride, dilation=dilation, group=c)
    dw, db, dx = h.run_op(op, [x, w, dy])
    np.testing.assert_allclose(dw, want_dw, atol=1e-3, rtol=1e-4)
    np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=(0, 2, 3)), atol=1e-3,
                               rtol=1e-4)
    forward = h.make_op("Conv", ["X", "w"], ["Y"], kernel=3, pad=pad, stride=stride,
                        dilation=dilation, group=c)
    # dX through the float64 im2col path, an independent implementation.
    grad64 = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], kernel=3, pad=pad,
                       stride=stride, dilation=dilation, group=c, engine="IM2COL")
    want_dx = h.run_op(grad64, [x.astype(np.float64), w.astype(np.float64),
                                dy.astype(np.float64)])[2]
    np.testing.assert_allclose(dx, want_dx, atol=1e-4, rtol=1e-4)
    assert h.run_op(forward, [x, w])[0].shape == dy.shape


@pytest.mark.parametrize("fusion_type", [2, 3])
@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("dtype,order", [(np.float32, "NCHW"), (np.float32, "NHWC"),
                                         (np.float64, "NCHW")])
def test_conv_fusion_sum(fusion_type, use_bias, in_place, dtype, order):
    """ConvFusion's sum fusions (Caffe2's ideep CONV_SUM / CONV_SUM_RELU):
    Y = Conv(X) + S, then Relu for type 3; S is the last input and, in
    Caffe2's form, the output too. float32 on oneDNN's sum post-op, float64
    through im2col."""
    rng = np.random.RandomState(fusion_type + 2 * use_bias + 4 * in_place)
    x = rng.uniform(-1, 1, (2, 5, 7, 6)).astype(dtype)
    w = rng.uniform(-1, 1, (8, 5, 3, 3)).astype(dtype)
    b = rng.uniform(-1, 1, (8,)).astype(dtype)
    want = conv_reference(x, w, b if use_bias else None, [1, 1], [1] * 4, [1, 1], 1, "NCHW")
    summand = rng.uniform(-2, 2, want.shape).astype(dtype)
    want = want + summand
    if fusion_type == 3:
        want = np.maximum(want, 0)
    if order == "NHWC":
        x, w = x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1)
        summand, want = summand.transpose(0, 2, 3, 1), want.transpose(0, 2, 3, 1)
    names = ["X", "w"] + (["b"] if use_bias else []) + ["S"]
    op = h.make_op("ConvFusion", names, ["S" if in_place else "Y"], kernel=3, pad=1,
                   fusion_type=fusion_type, order=order)
    inputs = [x, w] + ([b] if use_bias else []) + [summand]
    for _ in range(2):  # the second run reuses the primitives and the cached filter
        got = h.run_op(op, [np.ascontiguousarray(a) for a in inputs])[0]
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_conv_fusion_sum_errors():
    x = np.ones((1, 2, 4, 4), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    op = h.make_op("ConvFusion", ["X", "w", "S"], ["Y"], kernel=3, pad=1, fusion_type=2)
    h.assert_op_error(op, [x, w, np.ones((1, 3, 3, 3), np.float32)], "'S'", "[1, 3, 4, 4]")
    h.assert_op_error(h.make_op("ConvFusion", ["X", "w"], ["Y"], kernel=3, fusion_type=3),
                      [x, w], "the tensor to sum into")
    h.assert_op_error(h.make_op("ConvFusion", ["X", "w"], ["Y"], kernel=3, fusion_type=4),
                      [x, w], "fusion_type 4")


@pytest.mark.parametrize("engine", [None, "IM2COL"])
def test_conv_empty_batch(engine):
    x = np.zeros((0, 2, 4, 4), np.float32)
    w = np.ones((3, 2, 3, 3), np.float32)
    b = np.ones((3,), np.float32)
    y = h.run_op(h.make_op("Conv", ["X", "w", "b"], ["Y"], engine=engine), [x, w, b])[0]
    assert y.shape == (0, 3, 2, 2)
    grad = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"], engine=engine)
    dw, db, dx = h.run_op(grad, [x, w, y])
    assert dx.shape == x.shape and not dw.any() and not db.any() and dw.shape == w.shape


def test_conv_legacy_padding():
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (1, 2, 5, 6))
    w = rng.uniform(-1, 1, (3, 2, 3, 2))
    # VALID: no padding.
    op = h.make_op("Conv", ["X", "w"], ["Y"], legacy_pad=1, stride=2)
    h.check_output(op, [x, w], lambda x, w: conv_reference(
        x, w, None, [2, 2], [0] * 4, [1, 1], 1, "NCHW"))
    # SAME (stride 1): output keeps the input size, the extra pad at the end.
    op = h.make_op("Conv", ["X", "w"], ["Y"], legacy_pad=2)
    h.check_output(op, [x, w], lambda x, w: conv_reference(
        x, w, None, [1, 1], [1, 0, 1, 1], [1, 1], 1, "NCHW"))


def test_conv_gradient_maker():
    op = h.make_op("Conv", ["X", "w"], ["Y"], kernel=3, order="NHWC")
    grad_ops, input_grads = h.gradient_ops(op)
    assert len(grad_ops) == 1
    g = grad_ops[0]
    assert g.type == "ConvGradient"
    assert list(g.input) == ["X", "w", "Y_grad"]
    assert list(g.output) == ["w_grad", "X_grad"]
    args = {a.name: a for a in g.arg}
    assert args["no_bias"].i == 1 and args["order"].s == b"NHWC" and args["kernel"].i == 3
    assert input_grads == ["X_grad", "w_grad"]

    op = h.make_op("Conv2D", ["X", "w", "b"], ["Y"], no_gradient_to_input=1)
    grad_ops, input_grads = h.gradient_ops(op)
    assert grad_ops[0].type == "Conv2DGradient"
    assert list(grad_ops[0].output) == ["w_grad", "b_grad"]
    assert input_grads[0] is None


def test_conv_bad_input():
    x = np.zeros((1, 3, 5, 5), np.float32)
    w = np.zeros((4, 3, 3, 3), np.float32)
    conv = lambda **args: h.make_op("Conv", ["X", "w"], ["Y"], **args)
    # channel mismatch
    h.assert_op_error(conv(), [x, np.zeros((4, 2, 3, 3), np.float32)], "'w'", "'X'",
                      "channels per group")
    # group does not divide the channels
    h.assert_op_error(conv(group=2), [x, np.zeros((4, 1, 3, 3), np.float32)], "group 2",
                      "does not divide", "'X'")
    h.assert_op_error(conv(group=2), [np.zeros((1, 4, 5, 5), np.float32),
                                      np.zeros((3, 2, 3, 3), np.float32)], "group 2", "'w'")
    # kernel larger than the padded input
    h.assert_op_error(conv(pad=0), [np.zeros((1, 3, 2, 2), np.float32), w],
                      "larger than the padded input", "'X'")
    # wrong rank
    h.assert_op_error(conv(), [np.zeros((3, 5), np.float32), w], "'X'", "3 to 5 dims")
    h.assert_op_error(conv(), [x, np.zeros((4, 3, 3), np.float32)], "'w'", "as many dims")
    # kernel argument that contradicts the filter
    h.assert_op_error(conv(kernel=2), [x, w], "kernel argument", "'w'")
    h.assert_op_error(conv(kernels=[3, 3, 3]), [x, w], "kernel", "'X'")
    # bias of the wrong size; mixed and unsupported dtypes
    op = h.make_op("Conv", ["X", "w", "b"], ["Y"])
    h.assert_op_error(op, [x, w, np.zeros((3,), np.float32)], "'b'", "[4]")
    h.assert_op_error(conv(), [x, w.astype(np.float64)], "'w'", "float64")
    h.assert_op_error(conv(), [x.astype(np.int32), w.astype(np.int32)], "'X'", "int32")
    # bad arguments
    h.assert_op_error(conv(order="NCWH"), [x, w], "order")
    h.assert_op_error(conv(stride=0), [x, w], "stride")
    h.assert_op_error(conv(pad=-1), [x, w], "pads")
    h.assert_op_error(conv(pad=1, pads=[1, 1, 1, 1]), [x, w], "pad")
    h.assert_op_error(conv(legacy_pad=2, pad=1), [x, w], "legacy")
    # ConvGradient with a dY of the wrong shape
    grad = h.make_op("ConvGradient", ["X", "w", "dY"], ["dw", "db", "dX"])
    h.assert_op_error(grad, [x, w, np.zeros((1, 4, 2, 2), np.float32)], "'dY'", "[1, 4, 3, 3]")


# ------------------------------------------------------------- ConvTranspose


@st.composite
def conv_transpose_cases(draw, max_spatial=3, small=False):
    nd, order, group, cg, mg, kernel, stride = _draw_layout(draw, max_spatial, small)
    dilation = [draw(st.sampled_from([1, 1, 2])) for _ in range(nd)]
    adj = [draw(st.integers(0, s - 1)) for s in stride]
    sizes = [draw(st.integers(1, 2 if (nd == 3 or small) else 4)) for _ in range(nd)]
    pads = []
    for i in range(nd):
        full = (sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + adj[i]
        pads.append(draw(st.integers(0, min(2, (full - 1) // 2))))
    pads = pads + [draw(st.integers(0, min(2, (
        (sizes[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + adj[i] - pads[i]))))
        for i in range(nd)]
    batch = draw(st.integers(1, 2))
    c = cg * group
    x_shape = _channels_placed(order, batch, c, sizes)
    w_shape = _channels_placed(order, c, mg, kernel)
    args = {"order": order, "strides": stride, "pads": pads, "adjs": adj}
    if group != 1:
        args["group"] = group
    if any(d != 1 for d in dilation):
        args["dilations"] = dilation
    if draw(st.booleans()):
        args["kernels"] = kernel
    return dict(nd=nd, order=order, group=group, kernel=kernel, stride=stride, adj=adj,
                dilation=dilation, pads=pads, x_shape=x_shape, w_shape=w_shape,
                has_bias=draw(st.booleans()), m=mg * group, args=args)


def _conv_transpose_op(case):
    names = ["X", "w", "b"][:3 if case["has_bias"] else 2]
    return h.make_op("ConvTranspose", names, ["Y"], **case["args"])


def _conv_transpose_ref(case):
    def reference(x, w, b=None):
        return conv_transpose_reference(x, w, b, case["stride"], case["pads"], case["adj"],
                                        case["dilation"], case["group"], case["order"])
    return reference


@given(conv_transpose_cases(), h.float_dtypes, st.data())
def test_conv_transpose_matches_numpy(case, dtype, data):
    inputs = _inputs(data, case, dtype)
    op = _conv_transpose_op(case)
    h.check_output(op, inputs, _conv_transpose_ref(case), output_dtypes=[dtype])


@h.requires_cuda
@given(conv_transpose_cases(), h.float_dtypes, st.data())
def test_conv_transpose_cuda_matches_cpu(case, dtype, data):
    h.check_device(_conv_transpose_op(case), _inputs(data, case, dtype), atol=1e-3, rtol=1e-3)


@given(conv_transpose_cases(max_spatial=2, small=True), st.data())
def test_conv_transpose_gradient(case, data):
    inputs = _inputs(data, case, np.float64)
    h.check_gradient(_conv_transpose_op(case), inputs, list(range(len(inputs))))


def test_conv_transpose_caffe2_2d_args():
    rng = np.random.RandomState(3)
    x = rng.uniform(-1, 1, (2, 3, 3, 4))
    w = rng.uniform(-1, 1, (3, 2, 3, 3))
    b = rng.uniform(-1, 1, (2,))
    op = h.make_op("ConvTranspose", ["X", "w", "b"], ["Y"], kernel=3, stride=2, pad_t=1,
                   pad_l=0, pad_b=2, pad_r=1, adj_h=1, adj_w=0)
    h.check_output(op, [x, w, b], lambda x, w, b: conv_transpose_reference(
        x, w, b, [2, 2], [1, 0, 2, 1], [1, 0], [1, 1], 1, "NCHW"))
    h.check_gradient(op, [x, w, b], [0, 1, 2])


def test_conv_transpose_gradient_maker():
    op = h.make_op("ConvTranspose", ["X", "w"], ["Y"], stride=2)
    grad_ops, input_grads = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == ["ConvTransposeGradient"]
    assert list(grad_ops[0].output) == ["w_grad", "X_grad"]
    assert {a.name: a.i for a in grad_ops[0].arg}["no_bias"] == 1
    assert input_grads == ["X_grad", "w_grad"]


def test_conv_transpose_bad_input():
    x = np.zeros((1, 3, 4, 4), np.float32)
    w = np.zeros((3, 2, 3, 3), np.float32)
    op = lambda **args: h.make_op("ConvTranspose", ["X", "w"], ["Y"], **args)
    h.assert_op_error(op(), [x, np.zeros((2, 2, 3, 3), np.float32)], "'w'", "'X'",
                      "input channels")
    h.assert_op_error(op(group=2), [x, w], "group 2", "'X'")
    h.assert_op_error(op(), [np.zeros((3, 4), np.float32), w], "'X'", "3 to 5 dims")
    h.assert_op_error(op(stride=2, adj=3), [x, w], "adj")
    h.assert_op_error(op(pad=4), [np.zeros((1, 3, 1, 1), np.float32), w], "output size")
    h.assert_op_error(op(), [x.astype(np.int64), w.astype(np.int64)], "'X'", "int64")
    h.assert_op_error(h.make_op("ConvTranspose", ["X", "w", "b"], ["Y"]),
                      [x, w, np.zeros((3,), np.float32)], "'b'", "[2]")



_AVX2_WINOGRAD_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import op_harness as h
from conv_op_test import conv_reference

rng = np.random.RandomState(5)
worst = 0.0
for c, side in ((32, 8), (64, 17), (48, 12)):
    x = rng.uniform(-1, 1, (2, c, side, side)).astype(np.float32)
    w = rng.uniform(-0.2, 0.2, (c, c, 3, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, (c,)).astype(np.float32)
    s = rng.uniform(-1, 1, (2, c, side, side)).astype(np.float32)
    linear = conv_reference(x, w, b, [1, 1], [1] * 4, [1, 1], 1, "NCHW")
    nhwc = lambda a: np.ascontiguousarray(a.transpose(0, 2, 3, 1) if a.ndim == 4 else a)
    plain = h.make_op("Conv", ["X", "w", "b"], ["Y"], kernel=3, pad=1, order="NHWC",
                      training_mode=0)
    fused = h.make_op("ConvFusion", ["X", "w", "b", "S"], ["S"], kernel=3, pad=1,
                      order="NHWC", fusion_type=3)
    for op, inputs, want in ((plain, [x, w, b], linear),
                             (fused, [x, w, b, s], np.maximum(linear + s, 0))):
        for _ in range(2):
            got = h.run_op(op, [nhwc(a) for a in inputs])[0]
            worst = max(worst, float(np.abs(got - nhwc(want)).max() / np.abs(want).max()))
print(worst)
"""


def test_conv_inference_winograd_on_avx2():
    """With oneDNN limited to AVX2 (no Winograd kernel there), inference
    Convs and ConvFusions of 32-64 channels take Doppio's own Winograd
    F(4x4, 3x3) (conv_algorithm 0, auto): their values match numpy. In a
    subprocess, since oneDNN reads ONEDNN_MAX_CPU_ISA once."""
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", DNNL_MAX_CPU_ISA="AVX2")
    out = subprocess.run([sys.executable, "-c", _AVX2_WINOGRAD_SCRIPT, here], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert float(out.stdout.split()[-1]) < 2e-5


if __name__ == "__main__":
    h.run_main(__file__)
