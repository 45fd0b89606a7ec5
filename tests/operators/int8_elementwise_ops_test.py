"""Int8Add/AddRelu/Sum/SumRelu, Int8Relu, Int8LeakyRelu, Int8Sigmoid and
Int8Softmax against numpy on the reals their inputs stand for, rounded once
into the output quantization; in-place forms; the error paths."""
import numpy as np
import pytest

import op_harness as h


def _reals(q, scale, zero_point):
    return (q.astype(np.float64) - zero_point) * np.float64(np.float32(scale))


def _quantize(real, scale, zero_point, lo=0):
    return np.clip(np.rint(real / np.float64(np.float32(scale))) + zero_point, lo,
                   255).astype(np.uint8)


def _random(shape, seed):
    return np.random.RandomState(seed).randint(0, 256, size=shape).astype(np.uint8)


@pytest.mark.parametrize("op_type", ["Int8Add", "Int8AddRelu", "Int8Sum", "Int8SumRelu"])
def test_int8_add_matches_numpy(op_type):
    a, b = _random((3, 4, 5), 1), _random((3, 4, 5), 2)
    op = h.make_op(op_type, ["A", "B"], ["C"], Y_scale=0.07, Y_zero_point=60)
    data, scale, zero_point = h.run_op(op, [h.Int8(a, 0.05, 128), h.Int8(b, 0.02, 10)])[0]
    real = _reals(a, 0.05, 128) + _reals(b, 0.02, 10)
    relu = op_type.endswith("Relu")
    want = _quantize(np.maximum(real, 0) if relu else real, 0.07, 60)
    np.testing.assert_array_equal(data, want)
    assert (scale, zero_point) == (np.float32(0.07), 60)
    for output in ("A", "B"):
        in_place = h.make_op(op_type, ["A", "B"], [output], Y_scale=0.07, Y_zero_point=60)
        got = h.run_op(in_place, [h.Int8(a, 0.05, 128), h.Int8(b, 0.02, 10)])[0][0]
        np.testing.assert_array_equal(got, want)


def test_int8_sum_of_three_and_of_one():
    xs = [_random((2, 6), s) for s in range(3)]
    quants = [(0.1, 100), (0.05, 0), (0.2, 255)]
    op = h.make_op("Int8Sum", ["X0", "X1", "X2"], ["Y"], Y_scale=0.3, Y_zero_point=128)
    got = h.run_op(op, [h.Int8(x, *q) for x, q in zip(xs, quants)])[0][0]
    real = sum(_reals(x, *q) for x, q in zip(xs, quants))
    np.testing.assert_array_equal(got, _quantize(real, 0.3, 128))
    op = h.make_op("Int8Sum", ["X0"], ["Y"], Y_scale=0.2, Y_zero_point=50)
    got = h.run_op(op, [h.Int8(xs[0], 0.1, 100)])[0][0]
    np.testing.assert_array_equal(got, _quantize(_reals(xs[0], 0.1, 100), 0.2, 50))


def test_int8_add_refuses_broadcasting():
    op = h.make_op("Int8Add", ["A", "B"], ["C"], Y_scale=1.0)
    h.assert_op_error(op, [h.Int8(_random((2, 3), 0), 1, 0), h.Int8(_random((3,), 0), 1, 0)],
                      "'B' has shape [3]", "do not broadcast")


def test_int8_relu_keeps_the_input_quantization():
    x = _random((4, 9), 3)
    op = h.make_op("Int8Relu", ["X"], ["Y"])
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.25, 77)])[0]
    np.testing.assert_array_equal(data, np.maximum(x, 77))
    assert (scale, zero_point) == (0.25, 77)
    op = h.make_op("Int8Relu", ["X"], ["X"], Y_scale=0.5, Y_zero_point=0)
    data = h.run_op(op, [h.Int8(x, 0.25, 77)])[0][0]
    np.testing.assert_array_equal(data, _quantize(np.maximum(_reals(x, 0.25, 77), 0), 0.5, 0))


def test_int8_leaky_relu():
    x = _random((50,), 4)
    op = h.make_op("Int8LeakyRelu", ["X"], ["Y"], alpha=0.2, Y_scale=0.1, Y_zero_point=30)
    data = h.run_op(op, [h.Int8(x, 0.1, 128)])[0][0]
    r = _reals(x, 0.1, 128)
    np.testing.assert_array_equal(data, _quantize(np.where(r >= 0, r, 0.2 * r), 0.1, 30))


def test_int8_sigmoid_defaults_to_caffe2s_output_quantization():
    x = np.arange(256, dtype=np.uint8)
    op = h.make_op("Int8Sigmoid", ["X"], ["Y"])
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.05, 128)])[0]
    assert (scale, zero_point) == (np.float32(1.0 / 256), 0)
    want = _quantize(1 / (1 + np.exp(-_reals(x, 0.05, 128))), 1.0 / 256, 0)
    assert np.abs(data.astype(int) - want).max() <= 1
    assert (data == want).mean() > 0.99


@pytest.mark.parametrize("shape,axis", [((3, 10), None), ((2, 3, 4), None), ((2, 3, 4), 2)])
def test_int8_softmax_matches_numpy(shape, axis):
    x = _random(shape, 5)
    args = {} if axis is None else {"axis": axis}
    op = h.make_op("Int8Softmax", ["X"], ["Y"], **args)
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.04, 100)])[0]
    assert (scale, zero_point) == (np.float32(1.0 / 256), 0)
    cut = 1 if axis is None else axis
    r = _reals(x, 0.04, 100).reshape(int(np.prod(shape[:cut])), -1)
    e = np.exp(r - r.max(axis=1, keepdims=True))
    want = _quantize(e / e.sum(axis=1, keepdims=True), 1.0 / 256, 0).reshape(shape)
    assert np.abs(data.astype(int) - want).max() <= 1
    assert (data == want).mean() > 0.98


if __name__ == "__main__":
    h.run_main(__file__)
