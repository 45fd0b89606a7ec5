"""Int8MaxPool(+Relu) and Int8AveragePool(+Relu) against numpy loops
(padding not counted, means rounded half up as Caffe2's), global pooling,
requantization into a different output quantization, and the errors."""
import numpy as np
import pytest

import op_harness as h


def _pool_reference(x, k, stride, pad, is_max):
    n, hh, ww, c = x.shape
    oh, ow = (hh + 2 * pad - k) // stride + 1, (ww + 2 * pad - k) // stride + 1
    out = np.zeros((n, oh, ow, c), np.int64)
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * stride - pad, j * stride - pad
            win = x[:, max(y0, 0):min(y0 + k, hh), max(x0, 0):min(x0 + k, ww), :]
            win = win.reshape(n, -1, c).astype(np.int64)
            count = win.shape[1]
            out[:, i, j] = win.max(axis=1) if is_max else (win.sum(axis=1) + count // 2) // count
    return out


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("k,stride,pad", [(2, 2, 0), (3, 1, 1), (3, 2, 1)])
def test_int8_pool_matches_numpy(is_max, k, stride, pad):
    x = np.random.RandomState(k + stride).randint(0, 256, size=(2, 7, 6, 5)).astype(np.uint8)
    op_type = "Int8MaxPool" if is_max else "Int8AveragePool"
    op = h.make_op(op_type, ["X"], ["Y"], kernel=k, stride=stride, pad=pad, order="NHWC")
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.3, 40)])[0]
    np.testing.assert_array_equal(data, _pool_reference(x, k, stride, pad, is_max))
    assert (scale, zero_point) == (np.float32(0.3), 40)
    relu = h.make_op(op_type + "Relu", ["X"], ["Y"], kernel=k, stride=stride, pad=pad,
                     order="NHWC")
    data = h.run_op(relu, [h.Int8(x, 0.3, 40)])[0][0]
    np.testing.assert_array_equal(data, np.maximum(_pool_reference(x, k, stride, pad, is_max),
                                                   40))


def test_int8_global_average_pool_and_requantization():
    x = np.random.RandomState(9).randint(0, 256, size=(2, 5, 4, 3)).astype(np.uint8)
    op = h.make_op("Int8AveragePool", ["X"], ["Y"], global_pooling=1, order="NHWC",
                   Y_scale=0.5, Y_zero_point=10)
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.1, 128)])[0]
    mean_q = (x.reshape(2, 20, 3).astype(np.int64).sum(axis=1) + 10) // 20
    want = np.clip(np.rint((mean_q - 128) * np.float64(np.float32(0.1)) /
                           np.float64(np.float32(0.5))) + 10, 0, 255)
    np.testing.assert_array_equal(data.reshape(2, 3), want)
    assert data.shape == (2, 1, 1, 3) and (scale, zero_point) == (0.5, 10)


def test_int8_pool_errors():
    x = h.Int8(np.zeros((1, 4, 4, 2), np.uint8), 1.0, 0)
    h.assert_op_error(h.make_op("Int8MaxPool", ["X"], ["Y"], kernel=2), [x], "NHWC")
    h.assert_op_error(h.make_op("Int8MaxPool", ["X"], ["Y"], kernel=5, order="NHWC"), [x],
                      "'X'")
    flat = h.Int8(np.zeros((4, 2), np.uint8), 1.0, 0)
    h.assert_op_error(h.make_op("Int8AveragePool", ["X"], ["Y"], kernel=2, order="NHWC"),
                      [flat], "must be 4-D NHWC")


if __name__ == "__main__":
    h.run_main(__file__)
