"""Gather and ScatterAssign through the op harness, against numpy indexing."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

index_dtypes = st.sampled_from([np.int32, np.int64])


@st.composite
def gather_case(draw, data_dtypes=(np.float32, np.float64, np.int32, np.int64)):
    """DATA of rank 1..3 and INDICES of rank 0..2 with values in range."""
    data_shape = tuple(draw(h.dims(1, 3, 1, 4)))
    dtype = draw(st.sampled_from(data_dtypes))
    data = draw(h.arrays(data_shape, dtype))
    index_shape = tuple(draw(h.dims(0, 2, 0, 4)))
    indices = draw(h.arrays(index_shape, draw(index_dtypes),
                            elements=st.integers(0, data_shape[0] - 1)))
    return data, indices


@given(gather_case())
def test_gather_matches_numpy(case):
    data, indices = case
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    # numpy's integer-array indexing takes rows of the first axis: the
    # result has shape INDICES.shape + DATA.shape[1:].
    h.check_output(op, [data, indices], lambda d, i: d[i.astype(np.int64)],
                   output_dtypes=[data.dtype])


@given(gather_case(data_dtypes=(np.float64,)))
def test_gather_gradient(case):
    data, indices = case
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    h.check_gradient(op, [data, indices], [0])


def test_gather_gradient_is_a_gradient_slice():
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    ops, grads = h.gradient_ops(op)
    assert ops == []
    assert grads[0] == ("INDICES", "OUTPUT_grad")
    assert grads[1] is None


def test_gather_gradient_sums_repeated_indices():
    # Written out by hand: rows 0 and 2 of DATA, row 2 twice.
    data = np.arange(6, dtype=np.float64).reshape(3, 2)
    indices = np.array([2, 0, 2], dtype=np.int32)
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    h.check_output(op, [data, indices], lambda d, i: np.array([[4, 5], [0, 1], [4, 5]]))
    h.check_gradient(op, [data, indices], [0])


def test_gather_strings_and_bool():
    data = np.array([b"a", b"bc", b"d"], dtype=object)
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    out = h.run_op(op, [data, np.array([2, 2, 0], np.int64)])[0]
    assert list(out) == [b"d", b"d", b"a"]
    flags = np.array([[True, False], [False, False]])
    h.check_output(op, [flags, np.array([1, 0], np.int32)], lambda d, i: d[[1, 0]])


def test_gather_device():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    h.check_device(h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"]),
                   [data, np.array([3, 1], np.int64)])


@pytest.mark.parametrize("bad", [3, 7, -1])
def test_gather_out_of_range_index(bad):
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    h.assert_op_error(op, [np.zeros((3, 2), np.float32), np.array([0, bad], np.int64)],
                      "index %d at position 1 of 'INDICES'" % bad, "[0, 3)", "'DATA'")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_gather_wrap_indices_counts_from_the_end(dtype):
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([[-1, 0], [-4, 2]], dtype)
    op = h.make_op("Gather", ["D", "I"], ["Y"], wrap_indices=1)
    np.testing.assert_array_equal(h.run_op(op, [data, indices])[0], np.take(data, indices, 0))
    h.assert_op_error(op, [data, np.array([-5], dtype)], "index -5", "out of range [-4, 4)")
    h.assert_op_error(op, [data, np.array([4], dtype)], "index 4", "out of range [-4, 4)")
    plain = h.make_op("Gather", ["D", "I"], ["Y"])
    h.assert_op_error(plain, [data, np.array([-1], dtype)], "index -1")


def test_gather_bad_inputs():
    op = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"])
    h.assert_op_error(op, [np.zeros((3, 2), np.float32), np.array([0.0, 1.0])],
                      "'INDICES'", "supported types are int32, int64")
    h.assert_op_error(op, [np.array(1.0, np.float32), np.array([0], np.int32)],
                      "'DATA'", "at least one dimension")
    axis = h.make_op("Gather", ["DATA", "INDICES"], ["OUTPUT"], axis=1)
    h.assert_op_error(axis, [np.zeros((3, 2), np.float32), np.array([0], np.int32)],
                      "axis 1")


# ------------------------------------------------------------ ScatterAssign


def scatter_reference(data, indices, slices):
    expected = data.copy()
    rows = slices.reshape((indices.size,) + data.shape[1:])
    for k, index in enumerate(indices.reshape(-1)):
        expected[index] = rows[k]  # in order: with repeats the last one wins
    return expected


@given(gather_case(), st.data())
def test_scatter_assign_matches_numpy(case, data_strategy):
    data, indices = case
    slices = data_strategy.draw(h.arrays(indices.shape + data.shape[1:], data.dtype))
    op = h.make_op("ScatterAssign", ["DATA", "INDICES", "SLICES"], ["DATA"])
    h.check_output(op, [data, indices, slices], scatter_reference)


def test_scatter_assign_by_hand():
    data = np.zeros((3, 2), np.int64)
    slices = np.array([[1, 1], [2, 2], [3, 4]], np.int64)
    op = h.make_op("ScatterAssign", ["DATA", "INDICES", "SLICES"], ["DATA"])
    # Index 1 twice: the later slice wins; row 0 keeps its zeros.
    h.check_output(op, [data, np.array([1, 2, 1], np.int32), slices],
                   lambda *_: np.array([[0, 0], [3, 4], [2, 2]]))


def test_scatter_assign_errors():
    op = h.make_op("ScatterAssign", ["DATA", "INDICES", "SLICES"], ["DATA"])
    data = np.zeros((3, 2), np.float32)
    h.assert_op_error(op, [data, np.array([1, 3], np.int32), np.ones((2, 2), np.float32)],
                      "index 3 at position 1 of 'INDICES'", "[0, 3)")
    h.assert_op_error(op, [data, np.array([1], np.int32), np.ones((2, 2), np.float32)],
                      "'SLICES'", "need 2")
    h.assert_op_error(op, [data, np.array([1], np.int32), np.ones((1, 2), np.float64)],
                      "'SLICES'", "float64")
    not_in_place = h.make_op("ScatterAssign", ["DATA", "INDICES", "SLICES"], ["OUT"])
    h.assert_op_error(not_in_place, [data, np.array([1], np.int32), np.ones(2, np.float32)])


# ---- BatchGather ----


@st.composite
def batch_gather_case(draw, dtype=None):
    batch, rows = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    block = tuple(draw(h.dims(0, 2, 1, 3)))
    data = draw(h.arrays((batch, rows) + block, dtype or draw(h.float_dtypes)))
    index_shape = tuple(draw(h.dims(0, 2, 0, 3)))
    indices = draw(h.arrays(index_shape, draw(st.sampled_from([np.int32, np.int64])),
                            elements=st.integers(0, rows - 1)))
    return data, indices


@given(batch_gather_case())
def test_batch_gather_matches_numpy(case):
    op = h.make_op("BatchGather", ["D", "I"], ["Y"])
    h.check_output(op, list(case), lambda d, i: np.take(d, i.astype(np.int64), axis=1))


@given(batch_gather_case(np.float64))
def test_batch_gather_gradient(case):
    h.check_gradient(h.make_op("BatchGather", ["D", "I"], ["Y"]), list(case), [0])


def test_batch_gather_gradient_adds_repeated_indices():
    data = np.zeros((2, 3), np.float32)
    indices = np.array([1, 1, 0], np.int32)
    dy = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = h.run_op(h.make_op("BatchGatherGradient", ["D", "I", "dY"], ["dD"]),
                   [data, indices, dy])[0]
    np.testing.assert_array_equal(got, [[2, 1, 0], [5, 7, 0]])


def test_batch_gather_errors():
    op = h.make_op("BatchGather", ["D", "I"], ["Y"])
    h.assert_op_error(op, [np.zeros((2, 3), np.float32), np.array([3], np.int32)], "index 3",
                      "second dimension of 'D'")
    h.assert_op_error(op, [np.zeros(3, np.float32), np.array([0], np.int32)], "rank 2 or more")


if __name__ == "__main__":
    h.run_main(__file__)
