"""LengthsSum/Mean, SparseLengthsSum/Mean/WeightedSum and UnsortedSegmentSum through the
op harness, against numpy loops written here."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

index_dtypes = st.sampled_from([np.int32, np.int64])


def segments_reference(rows, lengths, mean):
    """One output row per segment of `rows` (an array of gathered rows)."""
    out = np.zeros((len(lengths),) + rows.shape[1:], dtype=rows.dtype)
    start = 0
    for r, length in enumerate(lengths):
        chunk = rows[start:start + length]
        if length:
            out[r] = chunk.mean(axis=0) if mean else chunk.sum(axis=0)
        start += length
    return out


@st.composite
def lengths_case(draw, sparse, dtype=None):
    # At least one segment of 2 or 3 rows, so a mean differs from a sum.
    lengths = draw(st.lists(st.integers(0, 3), min_size=0, max_size=3))
    lengths = draw(st.permutations(lengths + [draw(st.integers(2, 3))]))
    dtype = dtype or draw(h.float_dtypes)
    row_shape = tuple(draw(h.dims(0, 2, 1, 3)))
    lengths_array = np.array(lengths, dtype=draw(index_dtypes))
    if not sparse:
        data = draw(h.arrays((sum(lengths),) + row_shape, dtype))
        return data, lengths_array
    rows = draw(st.integers(1, 5))
    data = draw(h.arrays((rows,) + row_shape, dtype))
    indices = draw(h.arrays((sum(lengths),), draw(index_dtypes),
                            elements=st.integers(0, rows - 1)))
    return data, indices, lengths_array


@pytest.mark.parametrize("op_type,mean", [("LengthsSum", False), ("LengthsMean", True)])
@given(case=lengths_case(sparse=False))
def test_lengths_reducers(op_type, mean, case):
    op = h.make_op(op_type, ["DATA", "LENGTHS"], ["OUTPUT"])
    h.check_output(op, list(case), lambda d, l: segments_reference(d, list(l), mean),
                   output_dtypes=[case[0].dtype])


@pytest.mark.parametrize("op_type,mean",
                         [("SparseLengthsSum", False), ("SparseLengthsMean", True)])
@given(case=lengths_case(sparse=True))
def test_sparse_lengths_reducers(op_type, mean, case):
    op = h.make_op(op_type, ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"])
    h.check_output(op, list(case),
                   lambda d, i, l: segments_reference(d[i.astype(np.int64)], list(l), mean),
                   output_dtypes=[case[0].dtype])


@pytest.mark.parametrize("op_type", ["LengthsSum", "LengthsMean"])
@given(case=lengths_case(sparse=False, dtype=np.float64))
def test_lengths_reducer_gradients(op_type, case):
    op = h.make_op(op_type, ["DATA", "LENGTHS"], ["OUTPUT"])
    h.check_gradient(op, list(case), [0])


@pytest.mark.parametrize("op_type", ["SparseLengthsSum", "SparseLengthsMean"])
@given(case=lengths_case(sparse=True, dtype=np.float64))
def test_sparse_lengths_reducer_gradients(op_type, case):
    op = h.make_op(op_type, ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"])
    h.check_gradient(op, list(case), [0])


@st.composite
def weighted_case(draw, dtype=None):
    data, indices, lengths = draw(lengths_case(sparse=True, dtype=dtype))
    weights = draw(h.arrays(indices.shape, data.dtype))
    return data, weights, indices, lengths


WEIGHTED_INPUTS = ["DATA", "WEIGHTS", "INDICES", "LENGTHS"]


@given(weighted_case())
def test_sparse_lengths_weighted_sum(case):
    op = h.make_op("SparseLengthsWeightedSum", WEIGHTED_INPUTS, ["OUTPUT"])
    h.check_output(op, list(case), lambda d, w, i, l: segments_reference(
        d[i.astype(np.int64)] * w.reshape((-1,) + (1,) * (d.ndim - 1)), list(l), False),
        output_dtypes=[case[0].dtype])


@pytest.mark.parametrize("grad_on_weights", [0, 1])
@given(case=weighted_case(dtype=np.float64))
def test_sparse_lengths_weighted_sum_gradients(grad_on_weights, case):
    op = h.make_op("SparseLengthsWeightedSum", WEIGHTED_INPUTS, ["OUTPUT"],
                   grad_on_weights=grad_on_weights)
    ops, grads = h.gradient_ops(op)
    assert isinstance(grads[0], tuple)  # a GradientSlice of INDICES
    assert (grads[1] is not None) == bool(grad_on_weights)
    h.check_gradient(op, list(case), [0, 1] if grad_on_weights else [0])


def test_sparse_lengths_weighted_sum_errors():
    op = h.make_op("SparseLengthsWeightedSum", WEIGHTED_INPUTS, ["OUTPUT"])
    data = np.ones((3, 2), np.float32)
    h.assert_op_error(op, [data, np.ones(1, np.float32), np.array([0, 1], np.int32),
                           np.array([2], np.int32)], "'WEIGHTS'", "one weight per index")


def test_sparse_lengths_gradient_is_a_gradient_slice():
    op = h.make_op("SparseLengthsSum", ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"])
    ops, grads = h.gradient_ops(op)
    assert [o.type for o in ops] == ["SparseLengthsSumGradient"]
    assert list(ops[0].input) == ["OUTPUT_grad", "LENGTHS", "INDICES"]
    assert grads[0] == ("INDICES", ops[0].output[0])
    dense_ops, dense_grads = h.gradient_ops(
        h.make_op("LengthsMean", ["DATA", "LENGTHS"], ["OUTPUT"]))
    assert [o.type for o in dense_ops] == ["LengthsMeanGradient"]
    assert dense_grads[0] == "DATA_grad"


def test_sparse_lengths_mean_by_hand():
    data = np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 20.0]], np.float32)
    op = h.make_op("SparseLengthsMean", ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"])
    h.check_output(op, [data, np.array([2, 0, 0, 1], np.int64), np.array([1, 0, 3], np.int32)],
                   lambda *_: np.array([[10, 20], [0, 0], [5 / 3.0, 8 / 3.0]]))


def test_device():
    # Separate from the hypothesis tests: without a GPU it skips.
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    lengths = np.array([1, 3], np.int32)
    for op_type in ["SparseLengthsSum", "SparseLengthsMean"]:
        h.check_device(h.make_op(op_type, ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"]),
                       [data, np.array([3, 0, 1, 1], np.int64), lengths])
    for op_type in ["LengthsSum", "LengthsMean"]:
        h.check_device(h.make_op(op_type, ["DATA", "LENGTHS"], ["OUTPUT"]), [data, lengths])
    h.check_device(h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"]),
                   [data, np.array([1, 0, 1, 3], np.int32)])


def test_lengths_errors():
    data = np.zeros((4, 2), np.float32)
    sparse = h.make_op("SparseLengthsSum", ["DATA", "INDICES", "LENGTHS"], ["OUTPUT"])
    h.assert_op_error(sparse, [data, np.array([0, 1, 2], np.int64), np.array([2, -1, 2], np.int32)],
                      "length -1 at position 1 of 'LENGTHS'", "negative")
    h.assert_op_error(sparse, [data, np.array([0, 1, 2], np.int64), np.array([2, 2], np.int32)],
                      "'LENGTHS' sum to 4", "'INDICES' has 3")
    h.assert_op_error(sparse, [data, np.array([0, 9, 2], np.int64), np.array([3], np.int32)],
                      "index 9 at position 1 of 'INDICES'", "[0, 4)")
    h.assert_op_error(sparse, [data, np.array([0], np.int64), np.array([[1]], np.int32)],
                      "'LENGTHS' must be a vector")
    h.assert_op_error(sparse, [data, np.array([0], np.int64), np.array([1.0])],
                      "'LENGTHS'", "supported types are int32, int64")
    h.assert_op_error(sparse, [data.astype(np.int32), np.array([0], np.int64),
                               np.array([1], np.int32)], "'DATA'", "supported types are float32, float64")
    dense = h.make_op("LengthsSum", ["DATA", "LENGTHS"], ["OUTPUT"])
    h.assert_op_error(dense, [data, np.array([1, 2], np.int32)],
                      "'LENGTHS' sum to 3", "'DATA' has 4 rows")
    h.assert_op_error(dense, [data, np.array([5, -1], np.int32)], "length -1", "negative")
    grad = h.make_op("LengthsSumGradient", ["dY", "LENGTHS"], ["dX"])
    h.assert_op_error(grad, [np.zeros((3, 2)), np.array([1, 1], np.int32)],
                      "'dY' has 3 rows", "2 segments")


# ------------------------------------------------------- UnsortedSegmentSum


@st.composite
def segment_case(draw, dtype=None):
    rows = draw(st.integers(1, 5))
    dtype = dtype or draw(h.float_dtypes)
    data = draw(h.arrays((rows,) + tuple(draw(h.dims(0, 2, 1, 3))), dtype))
    ids = draw(h.arrays((rows,), draw(index_dtypes), elements=st.integers(0, 3)))
    return data, ids


def segment_sum_reference(data, ids, num_segments):
    out = np.zeros((num_segments,) + data.shape[1:], dtype=data.dtype)
    for row, segment in zip(data, ids):
        out[segment] += row
    return out


@given(segment_case(), st.integers(0, 2))
def test_unsorted_segment_sum(case, extra):
    data, ids = case
    op = h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"])
    h.check_output(op, [data, ids],
                   lambda d, i: segment_sum_reference(d, i, int(i.max()) + 1))
    sized = h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"],
                      num_segments=int(ids.max()) + 1 + extra)
    h.check_output(sized, [data, ids],
                   lambda d, i: segment_sum_reference(d, i, int(i.max()) + 1 + extra))


@given(segment_case(dtype=np.float64))
def test_unsorted_segment_sum_gradient(case):
    op = h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"], num_segments=5)
    h.check_gradient(op, list(case), [0])
    ops, _ = h.gradient_ops(op)
    assert [o.type for o in ops] == ["UnsortedSegmentSumGradient"]


def test_unsorted_segment_sum_errors():
    op = h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"])
    data = np.zeros((3, 2))
    h.assert_op_error(op, [data, np.array([0, -2, 1], np.int32)],
                      "segment id -2 at position 1 of 'SEGMENT_IDS'")
    h.assert_op_error(op, [data, np.array([0, 1], np.int32)],
                      "'SEGMENT_IDS' has 2 segment ids", "'DATA' has 3 rows")
    sized = h.make_op("UnsortedSegmentSum", ["DATA", "SEGMENT_IDS"], ["OUTPUT"], num_segments=2)
    h.assert_op_error(sized, [data, np.array([0, 2, 1], np.int64)],
                      "segment id 2 at position 1", "[0, 2)")


if __name__ == "__main__":
    h.run_main(__file__)
