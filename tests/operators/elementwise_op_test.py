"""Add, Sum and Scale through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h


@st.composite
def broadcastable_pair(draw, dtype=np.float64):
    """Two arrays whose shapes broadcast numpy-style."""
    shape = draw(h.dims(1, 4, 1, 4))
    other = list(shape[draw(st.integers(0, len(shape) - 1)):])
    other = [1 if draw(st.booleans()) else d for d in other]
    a = draw(h.arrays(tuple(shape), dtype))
    b = draw(h.arrays(tuple(other), dtype))
    if draw(st.booleans()):
        a, b = b, a
    return a, b


@given(broadcastable_pair(), h.float_dtypes)
def test_add_matches_numpy(pair, dtype):
    a, b = (x.astype(dtype) for x in pair)
    op = h.make_op("Add", ["A", "B"], ["C"])
    h.check_output(op, [a, b], lambda a, b: a + b)
    h.check_inplace(op, [a, b])


@given(broadcastable_pair())
def test_add_gradient(pair):
    h.check_gradient(h.make_op("Add", ["A", "B"], ["C"]), list(pair), [0, 1])


@given(h.dims(2, 4), st.data())
def test_add_legacy_broadcast(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = data.draw(st.integers(1, len(shape) - axis))
    a = data.draw(h.arrays(tuple(shape), np.float64))
    b = data.draw(h.arrays(tuple(shape[axis:axis + length]), np.float64))
    op = h.make_op("Add", ["A", "B"], ["C"], broadcast=1, axis=axis)
    expand = (slice(None),) * length + (None,) * (len(shape) - axis - length)
    h.check_output(op, [a, b], lambda a, b: a + b[expand])
    h.check_gradient(op, [a, b], [0, 1])


@given(st.integers(1, 4), h.dims(0, 3), h.float_dtypes, st.data())
def test_sum(count, shape, dtype, data):
    inputs = [data.draw(h.arrays(tuple(shape), dtype)) for _ in range(count)]
    names = ["X%d" % i for i in range(count)]
    op = h.make_op("Sum", names, ["Y"])
    h.check_output(op, inputs, lambda *xs: np.sum(np.stack(xs), axis=0).astype(dtype))
    h.check_inplace(op, inputs)
    h.check_gradient(op, [x.astype(np.float64) for x in inputs], list(range(count)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_sum_large_adds_in_input_order(dtype, count):
    """Past one block and one thread's share: each element is
    ((x0 + x1) + x2) + ..., numpy's order, so the bits are equal."""
    rng = np.random.RandomState(count)
    inputs = [(rng.randn(100003) * 1000).astype(dtype) for _ in range(count)]
    want = inputs[0].copy()
    for x in inputs[1:]:
        want = want + x
    names = ["X%d" % i for i in range(count)]
    np.testing.assert_array_equal(h.run_op(h.make_op("Sum", names, ["Y"]), inputs)[0], want)
    in_place = h.run_op(h.make_op("Sum", names, ["X0"]), inputs)[0]
    np.testing.assert_array_equal(in_place, want)


@given(h.dims(0, 3), st.floats(-3, 3), h.float_dtypes, st.data())
def test_scale(shape, scale, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    op = h.make_op("Scale", ["X"], ["Y"], scale=scale)
    h.check_output(op, [x], lambda x: (x * np.float32(scale)).astype(dtype))
    h.check_inplace(op, [x])
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_add_shape_mismatch_names_op_and_shapes():
    op = h.make_op("Add", ["A", "B"], ["C"])
    h.assert_op_error(op, [np.zeros((2, 3)), np.zeros((4,))], "[2, 3]", "[4]")


def test_harness_rejects_a_wrong_reference():
    # The harness itself must be able to fail.
    op = h.make_op("Scale", ["X"], ["Y"], scale=2.0)
    with pytest.raises(AssertionError):
        h.check_output(op, [np.ones(3, np.float32)], lambda x: 3 * x)


if __name__ == "__main__":
    h.run_main(__file__)
