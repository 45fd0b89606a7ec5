"""Int8Conv, Int8ConvRelu and Int8FC against an integer reference (torch's
float64 convolution of the integers minus their zero points, exact at these
sizes, plus the int32 bias, scaled and rounded as the ops document) and
within one step of a float reference of the reals; the arguments Conv has
(stride, pads, dilation, groups, depthwise); the error paths."""
import numpy as np
import pytest
import torch

import op_harness as h


def _requantize(acc, multiplier, y_zero_point, relu, y_scale):
    q = np.rint(acc * multiplier) + y_zero_point
    lo = np.clip(np.rint(0.0 / y_scale) + y_zero_point, 0, 255) if relu else 0
    return np.clip(q, lo, 255).astype(np.uint8)


def _multiplier(x_scale, w_scale, y_scale):
    # The ops compute X.scale x W.scale / Y_scale in double from float32s.
    return (np.float64(np.float32(x_scale)) * np.float64(np.float32(w_scale)) /
            np.float64(np.float32(y_scale)))


def _conv_integers(x, xz, w, wz, stride, pad, dilation, group):
    """NHWC integers -> NHWC float64 accumulators."""
    xt = torch.from_numpy(x.astype(np.float64) - xz).permute(0, 3, 1, 2)
    wt = torch.from_numpy(w.astype(np.float64) - wz).permute(0, 3, 1, 2)
    y = torch.nn.functional.conv2d(xt, wt, stride=stride, padding=pad, dilation=dilation,
                                   groups=group)
    return y.permute(0, 2, 3, 1).numpy()


CASES = [
    # (N, H, W, C, M, k, stride, pad, dilation, group)
    (2, 7, 6, 5, 4, 3, 1, 1, 1, 1),
    (1, 9, 9, 8, 6, 3, 2, 0, 1, 2),
    (1, 8, 7, 3, 5, 1, 1, 0, 1, 1),
    (2, 10, 10, 4, 4, 3, 1, 2, 2, 1),
    (1, 6, 6, 12, 12, 3, 1, 1, 1, 12),  # depthwise
    (1, 5, 5, 16, 32, 5, 1, 2, 1, 1),
]


def _assert_requantized(got, acc, multiplier, y_zero_point, relu, y_scale, exact):
    """The float32 path rounds in float64: exactly the reference. oneDNN's
    int8 epilogue rounds in float32: it may differ by one step, only where
    acc x multiplier lies within float32 rounding of a step's midpoint
    (scales like 0.03 make exact midpoints common)."""
    want = _requantize(acc, multiplier, y_zero_point, relu, y_scale)
    if exact:
        np.testing.assert_array_equal(got, want)
        return
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max() <= 1, diff.max()
    scaled = (acc * multiplier)[diff == 1]
    distance = np.abs(scaled - np.floor(scaled) - 0.5)
    assert np.all(distance <= 1e-5 * np.maximum(1, np.abs(scaled))), scaled[distance > 1e-5]


# A filter "fits" int8 when every value is within [zero point - 128, zero
# point + 127]: then CPUs with VNNI run oneDNN's int8 convolution, others and
# "wide" filters the float32 one.
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("filter_range", ["fits", "wide"])
def test_int8_conv_matches_integer_reference(case, relu, filter_range):
    n, hh, ww, c, m, k, stride, pad, dilation, group = case
    rng = np.random.RandomState(sum(case))
    x = rng.randint(0, 256, size=(n, hh, ww, c)).astype(np.uint8)
    xs, xz, wsc, wz, ys, yz = 0.02, 131, 0.004, 119, 0.09, 100
    low, high = (wz - 128, wz + 128) if filter_range == "fits" else (0, 256)
    w = rng.randint(max(low, 0), min(high, 256), size=(m, k, k, c // group)).astype(np.uint8)
    if filter_range == "wide":
        w.flat[0] = 255  # 136 above the zero point
    b = rng.randint(-20000, 20000, size=m).astype(np.int32)
    op = h.make_op("Int8ConvRelu" if relu else "Int8Conv", ["X", "W", "b"], ["Y"],
                   kernel=k, stride=stride, pad=pad, dilation=dilation, group=group,
                   order="NHWC", Y_scale=ys, Y_zero_point=yz)
    data, scale, zero_point = h.run_op(
        op, [h.Int8(x, xs, xz), h.Int8(w, wsc, wz), h.Int8(b, xs * wsc, 0)])[0]
    acc = _conv_integers(x, xz, w, wz, stride, pad, dilation, group) + b
    assert (scale, zero_point) == (np.float32(ys), yz)
    _assert_requantized(data, acc, _multiplier(xs, wsc, ys), yz, relu, ys,
                        exact=filter_range == "wide")
    # And within one step of the float convolution of the reals.
    reals = _conv_integers(x, xz, w, wz, stride, pad, dilation, group) * xs * wsc + b * xs * wsc
    if relu:
        reals = np.maximum(reals, 0)
    approx = np.clip(np.rint(reals / ys) + yz, 0, 255)
    assert np.abs(data.astype(np.int64) - approx).max() <= 1
    assert ((data > 0) & (data < 255)).mean() > 0.3  # the scales keep most unsaturated


def test_int8_conv_float_path_on_avx2_gives_the_same_bits():
    """Limited to AVX2 (no VNNI) the int8 convolution takes the float32 path."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
         "test_int8_conv_matches_integer_reference and fits"],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout


def test_int8_conv_without_bias_and_repeated_runs_keep_results():
    rng = np.random.RandomState(3)
    x = rng.randint(0, 256, size=(1, 5, 5, 4)).astype(np.uint8)
    w = rng.randint(0, 256, size=(3, 3, 3, 4)).astype(np.uint8)
    op = h.make_op("Int8Conv", ["X", "W"], ["Y"], kernel=3, order="NHWC", Y_scale=2.0,
                   Y_zero_point=128)
    inputs = [h.Int8(x, 0.1, 128), h.Int8(w, 0.05, 128)]
    first = h.run_op(op, inputs)[0][0]
    acc = _conv_integers(x, 128, w, 128, 1, 0, 1, 1)
    want = _requantize(acc, _multiplier(0.1, 0.05, 2.0), 128, False, 2.0)
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(h.run_op(op, inputs)[0][0], first)


def test_int8_conv_filter_changes_are_seen():
    """The op keeps the filter's float copy; new filter values must be used."""
    from doppio import _C
    from doppio.proto import doppio_pb2
    rng = np.random.RandomState(4)
    x = rng.randint(0, 256, size=(1, 4, 4, 2)).astype(np.uint8)
    op = h.make_op("Int8Conv", ["X", "W"], ["Y"], kernel=1, order="NHWC", Y_scale=1.0,
                   Y_zero_point=0)
    net = doppio_pb2.NetDef(name="conv_twice", op=[op])
    with h._FreshWorkspace():
        _C.feed_int8_blob("X", x, 1.0, 0)
        outputs = []
        for value in (1, 3):
            _C.feed_int8_blob("W", np.full((1, 1, 1, 2), value, np.uint8), 1.0, 0)
            if value == 1:
                _C.create_net(net.SerializeToString())
            _C.run_net("conv_twice")
            outputs.append(_C.fetch_blob("Y")[0].astype(np.int64))
    want = x.astype(np.int64).sum(axis=3, keepdims=True)
    np.testing.assert_array_equal(outputs[0], np.minimum(want, 255))
    np.testing.assert_array_equal(outputs[1], np.minimum(3 * want, 255))


@pytest.mark.parametrize("shape", [(4, 10), (3, 2, 5), (64, 300)])
@pytest.mark.parametrize("filter_range", ["fits", "wide"])
def test_int8_fc_matches_integer_reference(shape, filter_range):
    rng = np.random.RandomState(len(shape))
    x = rng.randint(0, 256, size=shape).astype(np.uint8)
    kk = int(np.prod(shape[1:]))
    w = rng.randint(2 if filter_range == "fits" else 0, 256, size=(7, kk)).astype(np.uint8)
    if filter_range == "wide":
        w.flat[0] = 0  # 130 below the zero point
    b = rng.randint(-5000, 5000, size=7).astype(np.int32)
    op = h.make_op("Int8FC", ["X", "W", "b"], ["Y"], Y_scale=0.3, Y_zero_point=90)
    data = h.run_op(op, [h.Int8(x, 0.05, 120), h.Int8(w, 0.02, 130),
                         h.Int8(b, 0.001, 0)])[0][0]
    acc = (x.reshape(shape[0], kk).astype(np.int64) - 120) @ (w.astype(np.int64) - 130).T + b
    _assert_requantized(data, acc, _multiplier(0.05, 0.02, 0.3), 90, False, 0.3,
                        exact=filter_range == "wide")


@pytest.mark.parametrize("stride,pad,adj", [(2, 1, 1), (1, 0, 0), (3, 2, 0)])
def test_int8_conv_transpose_matches_integer_reference(stride, pad, adj):
    rng = np.random.RandomState(stride + pad)
    x = rng.randint(0, 256, size=(2, 5, 4, 6)).astype(np.uint8)
    w = rng.randint(0, 256, size=(6, 3, 3, 7)).astype(np.uint8)
    b = rng.randint(-3000, 3000, size=7).astype(np.int32)
    op = h.make_op("Int8ConvTranspose", ["X", "W", "b"], ["Y"], kernel=3, stride=stride,
                   pad=pad, adj=adj, order="NHWC", Y_scale=0.4, Y_zero_point=128)
    data = h.run_op(op, [h.Int8(x, 0.03, 120), h.Int8(w, 0.02, 130),
                         h.Int8(b, 0.0006, 0)])[0][0]
    xt = torch.from_numpy(x.astype(np.float64) - 120).permute(0, 3, 1, 2)
    wt = torch.from_numpy(w.astype(np.float64) - 130).permute(0, 3, 1, 2)
    acc = torch.nn.functional.conv_transpose2d(xt, wt, stride=stride, padding=pad,
                                               output_padding=adj)
    acc = acc.permute(0, 2, 3, 1).numpy() + b
    np.testing.assert_array_equal(data, _requantize(acc, _multiplier(0.03, 0.02, 0.4), 128,
                                                    False, 0.4))
    nchw = h.make_op("Int8ConvTranspose", ["X", "W", "b"], ["Y"], kernel=3, order="NCHW")
    h.assert_op_error(nchw, [h.Int8(x, 1, 0), h.Int8(w, 1, 0), h.Int8(b, 1, 0)], "NHWC")


def _conv_inputs():
    return [h.Int8(np.zeros((1, 4, 4, 3), np.uint8), 1.0, 0),
            h.Int8(np.zeros((2, 3, 3, 3), np.uint8), 1.0, 0),
            h.Int8(np.zeros(2, np.int32), 1.0, 0)]


def test_int8_conv_errors_name_the_blobs():
    op = h.make_op("Int8Conv", ["X", "W", "b"], ["Y"], kernel=3, order="NCHW")
    h.assert_op_error(op, _conv_inputs(), "NHWC")
    op = h.make_op("Int8Conv", ["X", "W", "b"], ["Y"], kernel=3, order="NHWC")
    bad_filter = _conv_inputs()
    bad_filter[1] = h.Int8(np.zeros((2, 3, 3, 4), np.uint8), 1.0, 0)
    h.assert_op_error(op, bad_filter, "'W'")
    bad_bias = _conv_inputs()
    bad_bias[2] = h.Int8(np.zeros(3, np.int32), 1.0, 0)
    h.assert_op_error(op, bad_bias, "bias 'b' has 3 values")
    uint8_bias = _conv_inputs()
    uint8_bias[2] = h.Int8(np.zeros(2, np.uint8), 1.0, 0)
    h.assert_op_error(op, uint8_bias, "'b'", "not int32")
    float_x = _conv_inputs()
    float_x[0] = np.zeros((1, 4, 4, 3), np.float32)
    h.assert_op_error(op, float_x, "'X'", "Int8TensorCPU")
    small = _conv_inputs()
    small[0] = h.Int8(np.zeros((1, 2, 2, 3), np.uint8), 1.0, 0)
    h.assert_op_error(op, small, "'X'")


def test_int8_fc_errors_name_the_blobs():
    op = h.make_op("Int8FC", ["X", "W", "b"], ["Y"])
    x = h.Int8(np.zeros((2, 5), np.uint8), 1.0, 0)
    h.assert_op_error(op, [x, h.Int8(np.zeros((3, 4), np.uint8), 1.0, 0),
                           h.Int8(np.zeros(3, np.int32), 1.0, 0)], "'W'")
    h.assert_op_error(op, [x, h.Int8(np.zeros((3, 5), np.uint8), 1.0, 0),
                           h.Int8(np.zeros(4, np.int32), 1.0, 0)], "bias 'b' has 4 values")


if __name__ == "__main__":
    h.run_main(__file__)
