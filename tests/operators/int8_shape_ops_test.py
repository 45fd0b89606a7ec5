"""The Int8 ops that move values: Reshape, Flatten, Slice, Transpose,
Concat (inputs of several quantizations), ResizeNearest and ChannelShuffle,
against numpy; quantization kept or requantized; errors name the blobs."""
import numpy as np
import pytest

import op_harness as h


def _random(shape, seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=shape).astype(np.uint8)


def test_int8_reshape_and_flatten():
    x = _random((2, 3, 4))
    op = h.make_op("Int8Reshape", ["X"], ["Y", "old"], shape=[4, 0, -1])
    (data, scale, zero_point), old = h.run_op(op, [h.Int8(x, 0.5, 3)])
    np.testing.assert_array_equal(data, x.reshape(4, 3, 2))
    np.testing.assert_array_equal(old, [2, 3, 4])
    assert (scale, zero_point) == (0.5, 3)
    in_place = h.make_op("Int8Reshape", ["X", "shape"], ["X", "old"])
    data = h.run_op(in_place, [h.Int8(x, 0.5, 3), np.array([6, 4], np.int64)])[0][0]
    np.testing.assert_array_equal(data, x.reshape(6, 4))
    op = h.make_op("Int8Flatten", ["X"], ["Y"], axis=2)
    np.testing.assert_array_equal(h.run_op(op, [h.Int8(x, 0.5, 3)])[0][0], x.reshape(6, 4))
    bad = h.make_op("Int8Reshape", ["X"], ["Y", "old"], shape=[5, -1])
    h.assert_op_error(bad, [h.Int8(x, 0.5, 3)], "Reshape")


def test_int8_slice_and_transpose():
    x = _random((4, 5, 6), 1)
    op = h.make_op("Int8Slice", ["X"], ["Y"], starts=[1, 0, 2], ends=[3, -1, -2])
    np.testing.assert_array_equal(h.run_op(op, [h.Int8(x, 1, 0)])[0][0], x[1:3, :, 2:5])
    op = h.make_op("Int8Slice", ["X", "s", "e"], ["Y"])
    got = h.run_op(op, [h.Int8(x, 1, 0), np.array([0, 2], np.int32),
                        np.array([2, 4], np.int32)])[0][0]
    np.testing.assert_array_equal(got, x[0:2, 2:4])
    op = h.make_op("Int8Transpose", ["X"], ["Y"], axes=[2, 0, 1], Y_scale=2.0,
                   Y_zero_point=64)
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 1.0, 128)])[0]
    want = np.clip(np.rint((x.astype(np.float64) - 128) / 2) + 64, 0, 255)
    np.testing.assert_array_equal(data, want.transpose(2, 0, 1))
    assert (scale, zero_point) == (2.0, 64)
    bad = h.make_op("Int8Slice", ["X"], ["Y"], starts=[5], ends=[2])
    h.assert_op_error(bad, [h.Int8(x, 1, 0)], "out of range")


def test_int8_concat_requantizes_its_inputs():
    a, b = _random((2, 3, 3, 2), 2), _random((2, 3, 3, 4), 3)
    op = h.make_op("Int8Concat", ["A", "B"], ["Y", "split"], order="NHWC", Y_scale=0.1,
                   Y_zero_point=128)
    (data, scale, zero_point), split = h.run_op(
        op, [h.Int8(a, 0.1, 128), h.Int8(b, 0.05, 100)])
    b_in_y = np.clip(np.rint((b.astype(np.float64) - 100) * np.float64(np.float32(0.05)) /
                             np.float64(np.float32(0.1))) + 128, 0, 255)
    np.testing.assert_array_equal(data, np.concatenate([a, b_in_y], axis=3))
    np.testing.assert_array_equal(split, [2, 4])
    # Without an order Caffe2's Int8Concat joins along axis 0.
    op = h.make_op("Int8Concat", ["A", "B"], ["Y"])
    got = h.run_op(op, [h.Int8(a[:, :, :, :2], 1, 0), h.Int8(b[:, :, :, :2], 1, 0)])[0][0]
    np.testing.assert_array_equal(got, np.concatenate([a[..., :2], b[..., :2]], axis=0))
    h.assert_op_error(h.make_op("Int8Concat", ["A", "B"], ["Y"], order="NHWC"),
                      [h.Int8(a, 1, 0), h.Int8(b[:1], 1, 0)], "'B'")


@pytest.mark.parametrize("hs,ws", [(2.0, 2.0), (0.5, 1.5), (3.0, 1.0)])
def test_int8_resize_nearest(hs, ws):
    x = _random((2, 4, 6, 3), 4)
    op = h.make_op("Int8ResizeNearest", ["X"], ["Y"], height_scale=hs, width_scale=ws)
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.2, 9)])[0]
    oh, ow = int(4 * hs), int(6 * ws)
    rows = np.minimum((np.arange(oh) / np.float32(hs)).astype(int), 3)
    cols = np.minimum((np.arange(ow) / np.float32(ws)).astype(int), 5)
    np.testing.assert_array_equal(data, x[:, rows][:, :, cols])
    assert (scale, zero_point) == (np.float32(0.2), 9)


def test_int8_channel_shuffle():
    x = _random((2, 3, 3, 12), 5)
    op = h.make_op("Int8ChannelShuffle", ["X"], ["Y"], group=3, order="NHWC")
    want = x.reshape(2, 3, 3, 3, 4).transpose(0, 1, 2, 4, 3).reshape(2, 3, 3, 12)
    np.testing.assert_array_equal(h.run_op(op, [h.Int8(x, 1, 0)])[0][0], want)
    h.assert_op_error(h.make_op("Int8ChannelShuffle", ["X"], ["Y"], group=5), [h.Int8(x, 1, 0)],
                      "divisible by group 5")


if __name__ == "__main__":
    h.run_main(__file__)
