"""Concat and Split against numpy.concatenate / stack / split."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h
from doppio import _C

dtypes = st.sampled_from([np.float32, np.float64, np.int32, np.bool_])


@st.composite
def concat_case(draw, dtype=None):
    """(arrays to concatenate, axis argument, the canonical axis)."""
    shape = draw(h.dims(1, 4, 1, 3))
    axis = draw(st.integers(0, len(shape) - 1))
    dtype = dtype or draw(dtypes)
    count = draw(st.integers(1, 4))
    arrays = []
    for _ in range(count):
        part = list(shape)
        part[axis] = draw(st.integers(0, 3))
        arrays.append(draw(h.arrays(tuple(part), dtype)))
    argument = axis - len(shape) if draw(st.booleans()) else axis
    return arrays, argument, axis


def names(prefix, count):
    return ["%s%d" % (prefix, i) for i in range(count)]


@given(concat_case())
def test_concat(case):
    arrays, argument, axis = case
    op = h.make_op("Concat", names("X", len(arrays)), ["Y", "split_info"], axis=argument)
    h.check_output(op, arrays, lambda *xs: [np.concatenate(xs, axis=axis),
                                            np.array([x.shape[axis] for x in xs], np.int32)],
                   output_dtypes=[arrays[0].dtype, np.int32])


@h.requires_cuda
@given(concat_case())
def test_concat_cuda_matches_cpu(case):
    arrays, argument, _ = case
    h.check_device(h.make_op("Concat", names("X", len(arrays)), ["Y", "split_info"],
                             axis=argument), arrays)


@given(concat_case(dtype=np.float64))
def test_concat_gradient(case):
    arrays, argument, _ = case
    op = h.make_op("Concat", names("X", len(arrays)), ["Y", "split_info"], axis=argument)
    h.check_gradient(op, arrays, list(range(len(arrays))), outputs_with_grad=[0])


@given(h.dims(0, 3, 1, 3), st.integers(1, 3), h.float_dtypes, st.data())
def test_concat_add_axis_stacks(shape, count, dtype, data):
    axis = data.draw(st.integers(0, len(shape)))
    arrays = [data.draw(h.arrays(tuple(shape), dtype)) for _ in range(count)]
    op = h.make_op("Concat", names("X", count), ["Y", "split_info"], axis=axis, add_axis=1)
    h.check_output(op, arrays, lambda *xs: [np.stack(xs, axis=axis), np.ones(count, np.int32)])
    h.check_gradient(op, [x.astype(np.float64) for x in arrays], list(range(count)),
                     outputs_with_grad=[0])


@pytest.mark.parametrize("axis,shapes", [
    (3, [(8, 14, 14, 96), (8, 14, 14, 32), (8, 14, 14, 5)]),  # NHWC channels, DenseNet's
    (1, [(8, 64, 28, 28), (8, 32, 28, 28)]),                  # NCHW channels
    (0, [(300, 70), (1, 70)])])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_concat_large_inputs_split_over_threads_match_numpy(axis, shapes, dtype):
    """Rows of >= 16k elements go to the intra-op threads (each a contiguous
    range of output rows), and back through Split; a copy, so exactly
    numpy's."""
    rng = np.random.RandomState(axis)
    xs = [(rng.randn(*shape) * 100).astype(dtype) for shape in shapes]
    names = ["X%d" % i for i in range(len(xs))]
    y, info = h.run_op(h.make_op("Concat", names, ["Y", "info"], axis=axis), xs)
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=axis))
    np.testing.assert_array_equal(info, [shape[axis] for shape in shapes])
    # Split (Concat's gradient) takes input rows over the threads likewise.
    outs = h.run_op(h.make_op("Split", ["Y", "info"], names, axis=axis), [y, info])
    for got, want in zip(outs, xs):
        np.testing.assert_array_equal(got, want)


def test_concat_order_argument_and_default():
    rng = np.random.RandomState(0)
    a, b = rng.rand(2, 3, 2, 2), rng.rand(2, 1, 2, 2)
    op = h.make_op("Concat", ["A", "B"], ["Y", "info"])  # NCHW: channels
    h.check_output(op, [a, b], lambda a, b: np.concatenate([a, b], 1), outputs_to_check=[0])
    c, d = rng.rand(2, 2, 2, 3), rng.rand(2, 2, 2, 1)
    op = h.make_op("Concat", ["C", "D"], ["Y", "info"], order="NHWC")
    h.check_output(op, [c, d], lambda c, d: np.concatenate([c, d], 3), outputs_to_check=[0])


def test_concat_bad_inputs():
    f = np.zeros((2, 3), np.float32)
    op = h.make_op("Concat", ["A", "B"], ["Y", "info"], axis=1)
    h.assert_op_error(op, [f, np.zeros((3, 3), np.float32)], "'B'", "[3, 3]", "[2, 3]")
    h.assert_op_error(op, [f, np.zeros((2, 3), np.int32)], "float32", "int32")
    h.assert_op_error(op, [f, np.zeros((2, 3, 1), np.float32)], "'B'", "[2, 3, 1]")
    h.assert_op_error(h.make_op("Concat", ["A", "B"], ["Y", "info"], axis=2), [f, f],
                      "axis 2")
    h.assert_op_error(h.make_op("Concat", ["A", "B"], ["Y", "info"], axis=0, add_axis=1),
                      [f, np.zeros((2, 4), np.float32)], "add_axis")
    h.assert_op_error(h.make_op("Concat", ["A", "B"], ["Y", "info"], axis=1, order="NCHW"),
                      [f, f], "'axis'", "'order'")


@st.composite
def split_case(draw):
    """(input, axis, sizes) with the sizes adding up to the axis' length."""
    shape = draw(h.dims(1, 4, 1, 3))
    axis = draw(st.integers(0, len(shape) - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shape[axis] = sum(sizes)
    x = draw(h.arrays(tuple(shape), draw(dtypes)))
    return x, axis, sizes


def numpy_split(x, axis, sizes):
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@given(split_case(), st.sampled_from(["argument", "int32", "int64"]))
def test_split(case, source):
    x, axis, sizes = case
    op, inputs = _split_op(case, source)
    h.check_output(op, inputs, lambda x, *_: numpy_split(x, axis, sizes))


@h.requires_cuda
@given(split_case(), st.sampled_from(["argument", "int32", "int64"]))
def test_split_cuda_matches_cpu(case, source):
    h.check_device(*_split_op(case, source))


def _split_op(case, source):
    """(the Split op, its inputs): sizes as the argument or as an input of
    dtype `source`."""
    x, axis, sizes = case
    outputs = names("Y", len(sizes))
    if source == "argument":
        return h.make_op("Split", ["X"], outputs, axis=axis, split=sizes), [x]
    return h.make_op("Split", ["X", "sizes"], outputs, axis=axis), [x, np.array(sizes, source)]


@given(split_case())
def test_split_gradient(case):
    x, axis, sizes = case
    op = h.make_op("Split", ["X"], names("Y", len(sizes)), axis=axis, split=sizes)
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_split_equal_parts_add_axis_and_order():
    x = np.arange(24.0).reshape(2, 6, 2)
    op = h.make_op("Split", ["X"], ["A", "B", "C"], axis=1)
    h.check_output(op, [x], lambda x: np.split(x, 3, axis=1))
    op = h.make_op("Split", ["X"], ["A", "B"], axis=0, add_axis=1)
    h.check_output(op, [x], lambda x: [x[0], x[1]])
    op = h.make_op("Split", ["X"], ["A", "B"])  # NCHW: channels
    h.check_output(op, [x], lambda x: np.split(x, 2, axis=1))


def test_split_gradient_with_an_unused_output():
    # The missing part's gradient is zeros; the rest flows through Concat.
    op = h.make_op("Split", ["X"], ["A", "B"], axis=0)
    ops, grads = h.gradient_ops(op, ["A_grad", ""])
    assert [o.type for o in ops] == ["ConstantFill", "Concat"]
    assert grads == ["X_grad"]
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    with h._FreshWorkspace():
        _C.feed_blob("X", x)
        _C.run_operator_once(op.SerializeToString())
        _C.feed_blob("A_grad", np.ones((2, 2), np.float32))
        for grad_op in ops:
            _C.run_operator_once(grad_op.SerializeToString())
        got = _C.fetch_blob("X_grad")
    np.testing.assert_array_equal(got, [[1, 1], [1, 1], [0, 0], [0, 0]])


def test_split_bad_inputs():
    x = np.zeros((2, 6), np.float32)
    h.assert_op_error(h.make_op("Split", ["X"], ["A", "B"], axis=1, split=[2, 3]), [x],
                      "[2, 3]", "6")
    h.assert_op_error(h.make_op("Split", ["X"], ["A", "B"], axis=1, split=[8, -2]), [x],
                      "negative")
    h.assert_op_error(h.make_op("Split", ["X"], ["A", "B", "C", "D"], axis=1), [x],
                      "equal parts")
    h.assert_op_error(h.make_op("Split", ["X"], ["A", "B"], axis=1, split=[6]), [x],
                      "'split'", "2 outputs")
    h.assert_op_error(h.make_op("Split", ["X", "S"], ["A", "B"], axis=1),
                      [x, np.array([6], np.int32)], "'S'", "2 outputs")
    h.assert_op_error(h.make_op("Split", ["X", "S"], ["A", "B"], axis=1),
                      [x, np.array([3.0, 3.0], np.float32)], "'S'", "float32")
    h.assert_op_error(h.make_op("Split", ["X"], ["A", "B"], axis=-3), [x], "axis -3")


if __name__ == "__main__":
    h.run_main(__file__)
