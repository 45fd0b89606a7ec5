"""DiagonalFill and LengthsRangeFill against numpy (the other fillers are
tested in filler_op_test.cc)."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h
from doppio.proto import doppio_pb2


@given(st.integers(2, 4), st.integers(1, 4), st.integers(0, 4),
       st.sampled_from([("float", 2.5), ("int", 7)]))
def test_diagonal_fill_matches_numpy(rank, side, other, kind_and_value):
    kind, value = kind_and_value
    # Rank 2 may be rectangular (tall or wide); higher ranks are cubes.
    shape = [side, other] if rank == 2 else [side] * rank
    op = h.make_op("DiagonalFill", [], ["Y"], shape=shape, value=value)
    dtype = np.float32 if kind == "float" else np.int64

    def reference():
        expected = np.zeros(shape, dtype)
        np.fill_diagonal(expected, value)  # wrap=False: a tall matrix stops at min(rows, cols)
        return expected

    h.check_output(op, [], reference, output_dtypes=[dtype])


def test_diagonal_fill_dtype_and_shape_input():
    op = h.make_op("DiagonalFill", ["like"], ["Y"], value=3, dtype=doppio_pb2.TensorProto.INT32)
    got = h.run_op(op, [np.zeros((3, 3), np.float32)])[0]
    np.testing.assert_array_equal(got, 3 * np.eye(3, dtype=np.int32))
    assert got.dtype == np.int32


def test_diagonal_fill_errors():
    h.assert_op_error(h.make_op("DiagonalFill", [], ["Y"], shape=[4]), [], "rank 2 or more")
    h.assert_op_error(h.make_op("DiagonalFill", [], ["Y"], shape=[2, 3, 2]), [], "equal dims")


@given(st.lists(st.integers(0, 6), max_size=8))
def test_lengths_range_fill_matches_numpy(lengths):
    op = h.make_op("LengthsRangeFill", ["lengths"], ["Y"])
    h.check_output(op, [np.array(lengths, np.int32)],
                   lambda l: np.concatenate([np.arange(n) for n in l] + [np.zeros(0)])
                   .astype(np.int32), output_dtypes=[np.int32])


def test_lengths_range_fill_errors():
    op = h.make_op("LengthsRangeFill", ["lengths"], ["Y"])
    h.assert_op_error(op, [np.array([2, -1], np.int32)], "negative length -1")
    h.assert_op_error(op, [np.array([2, 1], np.int64)], "'lengths'", "int32")


if __name__ == "__main__":
    h.run_main(__file__)
