"""Reshape, Flatten, FlattenToVec and ResizeLike against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h


@st.composite
def reshape_case(draw):
    """(input shape, requested shape with Caffe2's 0 and -1, resolved shape)."""
    shape = draw(h.dims(0, 4, 1, 4))
    # Regroup the dims: a random split of their product into new dims.
    target = list(draw(st.permutations(shape)))
    if len(target) >= 2 and draw(st.booleans()):
        target = [target[0] * target[1]] + target[2:]
    requested = list(target)
    for i in range(min(len(shape), len(target))):
        if target[i] == shape[i] and draw(st.booleans()):
            requested[i] = 0  # copy the input's dim
    if requested and draw(st.booleans()):
        requested[draw(st.integers(0, len(requested) - 1))] = -1
    return tuple(shape), requested, tuple(target)


@given(reshape_case(), st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
       st.data())
def test_reshape_by_argument(case, dtype, data):
    shape, requested, target = case
    x = data.draw(h.arrays(shape, dtype))
    op = h.make_op("Reshape", ["X"], ["Y", "old_shape"], shape=requested)
    h.check_output(op, [x], lambda x: [x.reshape(target), np.array(shape, np.int64)],
                   output_dtypes=[dtype, np.int64])
    if dtype == np.float64:
        h.check_gradient(op, [x], [0], outputs_with_grad=[0])


@h.requires_cuda
@given(reshape_case(), st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
       st.data())
def test_reshape_cuda_matches_cpu(case, dtype, data):
    shape, requested, _ = case
    h.check_device(h.make_op("Reshape", ["X"], ["Y", "old_shape"], shape=requested),
                   [data.draw(h.arrays(shape, dtype))])


@given(reshape_case(), st.sampled_from([np.int32, np.int64]))
def test_reshape_by_input(case, index_type):
    shape, requested, target = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    op = h.make_op("Reshape", ["X", "new_shape"], ["Y", "old_shape"])
    h.check_output(op, [x, np.array(requested, index_type)],
                   lambda x, s: [x.reshape(target), np.array(shape, index_type)],
                   output_dtypes=[np.float32, index_type])


def test_reshape_in_place_and_strings():
    x = np.arange(6.0).reshape(2, 3)
    y, old = h.run_op(h.make_op("Reshape", ["X"], ["X", "old"], shape=[3, -1]), [x])
    np.testing.assert_array_equal(y, x.reshape(3, 2))
    np.testing.assert_array_equal(old, [2, 3])
    s = np.array([["a", "b"], ["c", "d"]], dtype=object)
    y, _ = h.run_op(h.make_op("Reshape", ["S"], ["T", "old"], shape=[4]), [s])
    assert list(y) == [b"a", b"b", b"c", b"d"]


def test_reshape_gradient_op_names():
    ops, grads = h.gradient_ops(h.make_op("Reshape", ["X"], ["Y", "old"], shape=[-1]))
    assert [(op.type, list(op.input), list(op.output)) for op in ops] == [
        ("Reshape", ["Y_grad", "old"], ["X_grad", "_X_grad_dims"])]
    assert len(ops[0].arg) == 0


def test_reshape_bad_inputs():
    x = np.zeros((2, 3), np.float32)
    op = lambda shape: h.make_op("Reshape", ["X"], ["Y", "old"], shape=shape)
    h.assert_op_error(op([4, 2]), [x], "[2, 3]", "[4, 2]")
    h.assert_op_error(op([-1, 4]), [x], "[2, 3]", "[-1, 4]")
    h.assert_op_error(op([-1, -1]), [x], "more than one -1")
    h.assert_op_error(op([2, 0, 0]), [x], "position 2")
    h.assert_op_error(op([2, -3]), [x], "-3")
    # A product past int64 is reported as too large, not wrapped to 0.
    big = 2 ** 40
    message = h.assert_op_error(op([big, big]), [x], "more than 2^63 elements")
    assert "(0 elements)" not in message
    h.assert_op_error(op([big, 0, big, -1]), [x], "more than 2^63 elements")
    # A bad shape is the caller's value: ValueError (and still RuntimeError).
    with pytest.raises(ValueError, match="more than one -1"):
        h.run_op(op([-1, -1]), [x])
    h.assert_op_error(h.make_op("Reshape", ["X"], ["Y", "old"]), [x], "'shape'")
    h.assert_op_error(h.make_op("Reshape", ["X", "S"], ["Y", "old"], shape=[6]),
                      [x, np.array([6])], "'shape'")
    h.assert_op_error(h.make_op("Reshape", ["X", "S"], ["Y", "old"]),
                      [x, np.array([6.0], np.float32)], "'S'", "float32")
    h.assert_op_error(h.make_op("Reshape", ["X", "S"], ["Y", "old"]),
                      [x, np.array([[6]])], "'S'", "1-D")


@given(h.dims(0, 4), h.float_dtypes, st.data())
def test_flatten(shape, dtype, data):
    axis = data.draw(st.integers(-len(shape), len(shape)))
    x = data.draw(h.arrays(tuple(shape), dtype))
    split = axis + len(shape) if axis < 0 else axis
    rows, cols = int(np.prod(shape[:split])), int(np.prod(shape[split:]))
    op = h.make_op("Flatten", ["X"], ["Y"], axis=axis)
    h.check_output(op, [x], lambda x: x.reshape(rows, cols))
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_flatten_default_axis_is_one():
    x = np.arange(24.0).reshape(2, 3, 4)
    h.check_output(h.make_op("Flatten", ["X"], ["Y"]), [x], lambda x: x.reshape(2, 12))
    h.assert_op_error(h.make_op("Flatten", ["X"], ["Y"], axis=4), [x], "axis 4", "[2, 3, 4]")


@given(h.dims(1, 4), h.float_dtypes, st.data())
def test_flatten_to_vec(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    op = h.make_op("FlattenToVec", ["X"], ["Y"])
    h.check_output(op, [x], lambda x: x.reshape(-1))
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_flatten_to_vec_needs_a_dim_and_resize_like_needs_equal_counts():
    h.assert_op_error(h.make_op("FlattenToVec", ["X"], ["Y"]), [np.array(1.0)], "'X'")
    op = h.make_op("ResizeLike", ["A", "B"], ["C"])
    h.check_output(op, [np.arange(6.0), np.zeros((3, 2))], lambda a, b: a.reshape(3, 2))
    h.assert_op_error(op, [np.arange(6.0), np.zeros((4, 2))], "'A'", "'B'", "[4, 2]")


if __name__ == "__main__":
    h.run_main(__file__)
