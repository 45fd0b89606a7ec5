"""EQ, NE, LT, LE, GT, GE, And, Or, Xor and Not against numpy."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h

COMPARISONS = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}
LOGICAL = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}
comparable_dtypes = st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.bool_])


def small_values(dtype):
    """Few distinct values, so equal pairs are common."""
    if np.dtype(dtype) == np.bool_:
        return st.booleans()
    return st.integers(-2, 2)


@given(st.sampled_from(sorted(COMPARISONS)), h.broadcastable_shapes(), comparable_dtypes,
       st.data())
def test_comparisons_match_numpy(name, shapes, dtype, data):
    a = data.draw(h.arrays(shapes[0], dtype, elements=small_values(dtype)))
    b = data.draw(h.arrays(shapes[1], dtype, elements=small_values(dtype)))
    op = h.make_op(name, ["A", "B"], ["C"])
    h.check_output(op, [a, b], COMPARISONS[name], output_dtypes=[np.bool_])


@h.requires_cuda
@given(st.sampled_from(sorted(COMPARISONS)), h.broadcastable_shapes(), comparable_dtypes,
       st.data())
def test_comparisons_cuda_match_cpu(name, shapes, dtype, data):
    a = data.draw(h.arrays(shapes[0], dtype, elements=small_values(dtype)))
    b = data.draw(h.arrays(shapes[1], dtype, elements=small_values(dtype)))
    h.check_device(h.make_op(name, ["A", "B"], ["C"]), [a, b])


def test_comparisons_with_nan_follow_ieee():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 1.0], np.float32)
    for name, fn in COMPARISONS.items():
        got = h.run_op(h.make_op(name, ["A", "B"], ["C"]), [a, b])[0]
        np.testing.assert_array_equal(got, fn(a, b), err_msg=name)


@given(st.sampled_from(sorted(COMPARISONS)), h.dims(1, 4), st.data())
def test_comparisons_legacy_broadcast(name, shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = data.draw(st.integers(1, len(shape) - axis))
    a = data.draw(h.arrays(tuple(shape), np.int32, elements=st.integers(-2, 2)))
    b = data.draw(h.arrays(tuple(shape[axis:axis + length]), np.int32,
                           elements=st.integers(-2, 2)))
    expand = (slice(None),) * length + (None,) * (len(shape) - axis - length)
    op = h.make_op(name, ["A", "B"], ["C"], broadcast=1, axis=axis)
    h.check_output(op, [a, b], lambda a, b: COMPARISONS[name](a, b[expand]))


@given(st.sampled_from(sorted(LOGICAL)), h.broadcastable_shapes(), st.data())
def test_logical_ops_match_numpy(name, shapes, data):
    a = data.draw(h.arrays(shapes[0], np.bool_))
    b = data.draw(h.arrays(shapes[1], np.bool_))
    op = h.make_op(name, ["A", "B"], ["C"])
    h.check_output(op, [a, b], LOGICAL[name], output_dtypes=[np.bool_])
    h.check_inplace(op, [a, b])


@given(h.dims(0, 4))
def test_not(shape):
    x = np.random.RandomState(len(shape)).rand(*shape) > 0.5
    x = np.asarray(x)
    op = h.make_op("Not", ["X"], ["Y"])
    h.check_output(op, [x], np.logical_not)
    h.check_inplace(op, [x])


def test_no_gradients():
    for name in list(COMPARISONS) + list(LOGICAL):
        ops, grads = h.gradient_ops(h.make_op(name, ["A", "B"], ["C"]))
        assert ops == [] and grads == [None, None], name
    ops, grads = h.gradient_ops(h.make_op("Not", ["X"], ["Y"]))
    assert ops == [] and grads == [None]


def test_bad_inputs():
    h.assert_op_error(h.make_op("LT", ["A", "B"], ["C"]),
                      [np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int32)],
                      "float32", "int32")
    h.assert_op_error(h.make_op("EQ", ["A", "B"], ["C"]),
                      [np.zeros((2, 3)), np.zeros((4,))], "[2, 3]", "[4]")
    h.assert_op_error(h.make_op("And", ["A", "B"], ["C"]),
                      [np.zeros(3, np.float32), np.zeros(3, np.float32)], "'A'", "float32")
    h.assert_op_error(h.make_op("Not", ["X"], ["Y"]), [np.zeros(3, np.int32)], "'X'", "int32")
    h.assert_op_error(h.make_op("GE", ["A", "B"], ["C"]),
                      [np.array(["a"], object), np.array(["b"], object)], "'A'", "str")
    # The bool result cannot overwrite a numeric input.
    h.assert_op_error(h.make_op("GT", ["A", "B"], ["A"]),
                      [np.zeros(3, np.float32), np.zeros(3, np.float32)], "in place")


if __name__ == "__main__":
    h.run_main(__file__)
