"""Max and Min of n tensors and their gradients, against numpy."""
import functools

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

REFERENCE = {"Max": np.maximum, "Min": np.minimum}
names = st.sampled_from(["Max", "Min"])


@given(names, st.integers(1, 4), h.dims(0, 3),
       st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8,
                        np.int16, np.uint16, np.uint32, np.uint64]), st.data())
def test_forward_matches_numpy(name, count, shape, dtype, data):
    inputs = [data.draw(h.arrays(tuple(shape), dtype)) for _ in range(count)]
    op = h.make_op(name, ["X%d" % i for i in range(count)], ["Y"])
    h.check_output(op, inputs, lambda *xs: functools.reduce(REFERENCE[name], xs))
    h.check_inplace(op, inputs)


@pytest.mark.parametrize("name", ["Max", "Min"])
def test_float16_compares_values_and_keeps_nan(name):
    rng = np.random.RandomState(0)
    inputs = [rng.randn(5, 7).astype(np.float16) for _ in range(3)]
    inputs[1][0, :3] = [np.nan, np.inf, -np.inf]
    inputs[2][0, 3] = np.nan
    op = h.make_op(name, ["X0", "X1", "X2"], ["Y"])
    got = h.run_op(op, inputs)[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, functools.reduce(REFERENCE[name], inputs))


@h.requires_cuda
@given(names, st.integers(1, 4), h.dims(0, 3),
       st.sampled_from([np.float32, np.float64, np.int32, np.int64]), st.data())
def test_forward_cuda_matches_cpu(name, count, shape, dtype, data):
    inputs = [data.draw(h.arrays(tuple(shape), dtype)) for _ in range(count)]
    h.check_device(h.make_op(name, ["X%d" % i for i in range(count)], ["Y"]), inputs)


@given(names, st.integers(1, 4), h.dims(0, 3), st.data())
def test_gradient_matches_finite_differences(name, count, shape, data):
    # Distinct values, so no two inputs tie within the finite-difference step.
    total = count * int(np.prod(shape))
    values = data.draw(st.permutations(range(total)))
    stacked = np.array(values, np.float64).reshape((count,) + tuple(shape)) * 0.1
    inputs = list(stacked)
    op = h.make_op(name, ["X%d" % i for i in range(count)], ["Y"])
    h.check_gradient(op, inputs, list(range(count)))


def test_ties_send_the_gradient_to_every_winner():
    # Caffe2's rule: each input equal to the output gets dY.
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 0.0, 5.0])
    y = np.maximum(a, b)
    dy = np.array([10.0, 20.0, 30.0])
    op = h.make_op("MaxGradient", ["Y", "dY", "A", "B"], ["dA", "dB"])
    h.check_output(op, [y, dy, a, b], lambda *_: [np.array([10.0, 20.0, 0.0]),
                                                  np.array([10.0, 0.0, 30.0])])


def test_nan_wins_like_numpy():
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([1.0, np.nan, 0.0], np.float32)
    for name, fn in REFERENCE.items():
        got = h.run_op(h.make_op(name, ["A", "B"], ["Y"]), [a, b])[0]
        np.testing.assert_array_equal(got, fn(a, b), err_msg=name)


def test_gradient_maker():
    ops, grads = h.gradient_ops(h.make_op("Min", ["A", "B"], ["Y"]))
    assert ops[0].type == "MinGradient"
    assert list(ops[0].input) == ["Y", "Y_grad", "A", "B"]
    assert grads == ["A_grad", "B_grad"]
    with pytest.raises(RuntimeError, match="in place"):
        h.gradient_ops(h.make_op("Max", ["A", "B"], ["A"]))


def test_bad_inputs():
    h.assert_op_error(h.make_op("Max", ["A", "B"], ["Y"]),
                      [np.zeros((2, 3)), np.zeros((3, 2))], "'B'", "[3, 2]", "[2, 3]")
    h.assert_op_error(h.make_op("Min", ["A", "B"], ["Y"]),
                      [np.zeros(3, np.float32), np.zeros(3, np.int32)], "float32", "int32")
    h.assert_op_error(h.make_op("Max", ["A"], ["Y"]), [np.zeros(3, bool)], "'A'", "bool")
    h.assert_op_error(h.make_op("MaxGradient", ["Y", "dY", "A"], ["dA"]),
                      [np.zeros(3), np.zeros(4), np.zeros(3)], "'dY'", "[4]")


if __name__ == "__main__":
    h.run_main(__file__)
