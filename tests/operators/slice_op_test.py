"""Slice and SliceGradient against numpy indexing, with Caffe2's bounds rule:
a negative bound v is dim + 1 + v (so -1 is the end), bounds past the end
are clamped."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


def caffe2_slice(x, starts, ends):
    index = []
    for i, d in enumerate(x.shape):
        if i >= len(starts):
            index.append(slice(None))
            continue
        s = d + 1 + starts[i] if starts[i] < 0 else min(starts[i], d)
        e = d + 1 + ends[i] if ends[i] < 0 else min(ends[i], d)
        index.append(slice(s, e))
    return x[tuple(index)]


@st.composite
def slice_case(draw, dtype=None):
    shape = draw(h.dims(1, 4, 1, 4))
    x = draw(h.arrays(tuple(shape), dtype or draw(st.sampled_from(
        [np.float32, np.float64, np.int64, np.bool_]))))
    count = draw(st.integers(1, len(shape)))
    starts, ends = [], []
    for d in shape[:count]:
        s = draw(st.integers(0, d))
        e = draw(st.integers(s, d + 2))  # past the end: clamped
        if draw(st.booleans()):
            s = s - d - 1  # the same bound, counted from the end
        if e <= d and draw(st.booleans()):
            e = e - d - 1
        starts.append(s)
        ends.append(e)
    return x, starts, ends


@given(slice_case())
def test_slice_by_arguments(case):
    x, starts, ends = case
    op = h.make_op("Slice", ["X"], ["Y"], starts=starts, ends=ends)
    h.check_output(op, [x], lambda x: caffe2_slice(x, starts, ends))


@h.requires_cuda
@given(slice_case())
def test_slice_cuda_matches_cpu(case):
    x, starts, ends = case
    h.check_device(h.make_op("Slice", ["X"], ["Y"], starts=starts, ends=ends), [x])


@given(slice_case(), st.sampled_from([np.int32, np.int64]))
def test_slice_by_inputs(case, index_type):
    x, starts, ends = case
    op = h.make_op("Slice", ["X", "starts", "ends"], ["Y"])
    h.check_output(op, [x, np.array(starts, index_type), np.array(ends, index_type)],
                   lambda x, s, e: caffe2_slice(x, starts, ends))


@given(slice_case(dtype=np.float64), st.booleans())
def test_slice_gradient(case, as_inputs):
    x, starts, ends = case
    if as_inputs:
        op = h.make_op("Slice", ["X", "starts", "ends"], ["Y"])
        h.check_gradient(op, [x, np.array(starts), np.array(ends)], [0])
    else:
        op = h.make_op("Slice", ["X"], ["Y"], starts=starts, ends=ends)
        h.check_gradient(op, [x], [0])


def test_slice_gradient_op_layout_and_strings():
    ops, _ = h.gradient_ops(h.make_op("Slice", ["X", "s", "e"], ["Y"]))
    assert list(ops[0].input) == ["X", "s", "e", "Y_grad"]
    ops, _ = h.gradient_ops(h.make_op("Slice", ["X"], ["Y"], starts=[0], ends=[1]))
    assert list(ops[0].input) == ["X", "Y_grad"] and len(ops[0].arg) == 2
    s = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    y = h.run_op(h.make_op("Slice", ["S"], ["T"], starts=[1, 1], ends=[2, -1]), [s])[0]
    assert y.tolist() == [[b"e", b"f"]]


def test_out_of_range_bounds_are_errors():
    x = np.zeros((3, 4), np.float32)
    op = lambda starts, ends: h.make_op("Slice", ["X"], ["Y"], starts=starts, ends=ends)
    h.assert_op_error(op([-10], [2]), [x], "out of range", "[-10, 2)")
    h.assert_op_error(op([2], [1]), [x], "out of range", "dim 0")
    h.assert_op_error(op([0, 0], [1]), [x], "differ in length")
    h.assert_op_error(op([0, 0, 0], [1, 1, 1]), [x], "[3, 4]")
    h.assert_op_error(h.make_op("Slice", ["X"], ["Y"]), [x], "'starts'")
    h.assert_op_error(h.make_op("Slice", ["X", "s", "e"], ["Y"]),
                      [x, np.array([0.0]), np.array([1.0])], "'s'", "float64")
    h.assert_op_error(h.make_op("SliceGradient", ["X", "dY"], ["dX"], starts=[0], ends=[2]),
                      [x, np.zeros((3, 4), np.float32)], "'dY'", "[2, 4]")


if __name__ == "__main__":
    h.run_main(__file__)
