"""Squeeze and ExpandDims against numpy."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


def _expand_dims_case(shape, dtype, data):
    """(x, sorted dims to insert, the ExpandDims op)."""
    x = data.draw(h.arrays(tuple(shape), dtype))
    count = data.draw(st.integers(1, 3))
    dims = sorted(data.draw(st.lists(st.integers(0, len(shape) + count - 1), min_size=count,
                                     max_size=count, unique=True)))
    return x, dims, h.make_op("ExpandDims", ["X"], ["Y"], dims=dims)


@given(h.dims(0, 4, 1, 3), h.float_dtypes, st.data())
def test_expand_dims_then_squeeze(shape, dtype, data):
    x, dims, expand = _expand_dims_case(shape, dtype, data)
    expected = x
    for d in dims:
        expected = np.expand_dims(expected, d)
    y = h.check_output(expand, [x], lambda x: expected)[0]
    squeeze = h.make_op("Squeeze", ["Y"], ["Z"], dims=list(reversed(dims)))  # any order
    h.check_output(squeeze, [y], lambda y: np.squeeze(y, axis=tuple(dims)))
    if dtype == np.float64:
        h.check_gradient(expand, [x], [0])
        h.check_gradient(squeeze, [y], [0])


@h.requires_cuda
@given(h.dims(0, 4, 1, 3), h.float_dtypes, st.data())
def test_expand_dims_cuda_matches_cpu(shape, dtype, data):
    x, _, expand = _expand_dims_case(shape, dtype, data)
    h.check_device(expand, [x])


def test_in_place_and_duplicates():
    x = np.arange(6.0).reshape(2, 1, 3)
    y = h.run_op(h.make_op("Squeeze", ["X"], ["X"], dims=[1, 1]), [x])[0]
    np.testing.assert_array_equal(y, x.reshape(2, 3))
    y = h.run_op(h.make_op("ExpandDims", ["X"], ["X"], dims=[0, 3]), [x])[0]
    assert y.shape == (1, 2, 1, 1, 3)


def test_gradients_are_each_other():
    ops, _ = h.gradient_ops(h.make_op("Squeeze", ["X"], ["Y"], dims=[0]))
    assert ops[0].type == "ExpandDims" and list(ops[0].arg[0].ints) == [0]
    ops, _ = h.gradient_ops(h.make_op("ExpandDims", ["X"], ["Y"], dims=[2]))
    assert ops[0].type == "Squeeze"


def test_bad_dims():
    x = np.zeros((2, 1, 3), np.float32)
    h.assert_op_error(h.make_op("Squeeze", ["X"], ["Y"], dims=[0]), [x], "dim 0", "not 1")
    h.assert_op_error(h.make_op("Squeeze", ["X"], ["Y"], dims=[3]), [x], "dim 3", "[2, 1, 3]")
    h.assert_op_error(h.make_op("Squeeze", ["X"], ["Y"], dims=[-1]), [x], "negative")
    h.assert_op_error(h.make_op("Squeeze", ["X"], ["Y"]), [x], "'dims'")
    h.assert_op_error(h.make_op("ExpandDims", ["X"], ["Y"], dims=[5]), [x], "dim 5")


if __name__ == "__main__":
    h.run_main(__file__)
