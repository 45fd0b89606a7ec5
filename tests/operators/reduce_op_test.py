"""ReduceSum / ReduceMean / ReduceMax, SumElements, RowwiseMax / ColwiseMax
and their gradients through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

NUMPY_REDUCTION = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max}


@st.composite
def reduce_case(draw):
    """A shape, the axes argument (None: absent, i.e. every dim; some
    negative) and keepdims."""
    shape = draw(h.dims(0, 4, 1, 4))
    rank = len(shape)
    axes = None
    if rank and draw(st.booleans()):
        chosen = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank,
                               unique=True))
        axes = [a - rank if draw(st.booleans()) else a for a in chosen]
    keepdims = draw(st.integers(0, 1))
    return tuple(shape), axes, keepdims


def reduce_op(op_type, axes, keepdims, inputs=("X",), outputs=("Y",)):
    args = {"keepdims": keepdims}
    if axes is not None:
        args["axes"] = axes
    return h.make_op(op_type, list(inputs), list(outputs), **args)


def reduce_reference(op_type, x, axes, keepdims):
    axis = None if axes is None else tuple(axes)
    y = NUMPY_REDUCTION[op_type](x, axis=axis, keepdims=bool(keepdims))
    return np.asarray(y, dtype=x.dtype)


def distinct_values(shape, dtype, seed):
    """Values at least 1/size apart, so a max is unique and finite
    differences stay on one side of every tie."""
    size = int(np.prod(shape, dtype=np.int64))
    values = np.random.RandomState(seed).permutation(size) / max(size, 1) - 0.5
    return values.reshape(shape).astype(dtype)


def check_reduce_against_numpy(op_type, case, dtype, data):
    shape, axes, keepdims = case
    x = data.draw(h.arrays(shape, dtype))
    op = reduce_op(op_type, axes, keepdims)
    h.check_output(op, [x], lambda x: reduce_reference(op_type, x, axes, keepdims),
                   output_dtypes=[dtype])


@pytest.mark.parametrize("op_type", sorted(NUMPY_REDUCTION))
@given(case=reduce_case(), dtype=h.float_dtypes, data=st.data())
def test_reduce_matches_numpy(op_type, case, dtype, data):
    check_reduce_against_numpy(op_type, case, dtype, data)


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMax"])
@given(case=reduce_case(), dtype=st.sampled_from([np.int32, np.int64]), data=st.data())
def test_reduce_integers(op_type, case, dtype, data):
    check_reduce_against_numpy(op_type, case, dtype, data)


@pytest.mark.parametrize("op_type", sorted(NUMPY_REDUCTION))
@given(case=reduce_case(), seed=st.integers(0, 1000))
def test_reduce_gradient(op_type, case, seed):
    shape, axes, keepdims = case
    x = distinct_values(shape, np.float64, seed)
    h.check_gradient(reduce_op(op_type, axes, keepdims), [x], [0])


@given(case=reduce_case(), seed=st.integers(0, 1000))
def test_reduce_mean_gradient_float32(case, seed):
    shape, axes, keepdims = case
    x = distinct_values(shape, np.float32, seed)
    h.check_gradient(reduce_op("ReduceMean", axes, keepdims), [x], [0])


def test_reduce_gradient_maker_follows_caffe2():
    op = reduce_op("ReduceMax", [1], 0)
    ops, input_grads = h.gradient_ops(op)
    assert [o.type for o in ops] == ["ReduceMaxGradient"]
    assert list(ops[0].input) == ["Y_grad", "X", "Y"]
    assert {a.name for a in ops[0].arg} == {"axes", "keepdims"}
    assert list(input_grads) == ["X_grad"]


def test_reduce_max_gradient_shares_ties():
    # Every element equal to the max gets dY (Caffe2's rule), checked by hand.
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.5]])
    y = x.max(axis=1)
    dy = np.array([10.0, -4.0])
    op = h.make_op("ReduceMaxGradient", ["dY", "X", "Y"], ["dX"], axes=[1], keepdims=0)
    h.check_output(op, [dy, x, y],
                   lambda dy, x, y: np.array([[0, 10, 10], [-4, -4, 0]], dtype=np.float64))


@given(case=reduce_case(), data=st.data())
def test_reduce_sum_gradient_op_broadcasts_back(case, data):
    shape, axes, keepdims = case
    x = data.draw(h.arrays(shape, np.float32))
    y = reduce_reference("ReduceSum", x, axes, keepdims)
    dy = data.draw(h.arrays(y.shape, np.float32))
    op = reduce_op("ReduceSumGradient", axes, keepdims, ["dY", "X", "Y"], ["dX"])
    axis = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    h.check_output(op, [dy, x, y],
                   lambda dy, x, y: np.broadcast_to(np.expand_dims(dy, axis) if not keepdims
                                                    else dy, x.shape))


def test_reduce_mean_of_empty_dim_is_nan_and_sum_is_zero():
    x = np.zeros((2, 0), np.float32)
    h.check_output(reduce_op("ReduceSum", [1], 0), [x], lambda x: np.zeros(2, np.float32))
    out = h.run_op(reduce_op("ReduceMean", [1], 0), [x])[0]
    assert out.shape == (2,) and np.isnan(out).all()


@h.requires_cuda
@given(case=reduce_case())
def test_reduce_cpu_matches_cuda(case):
    shape, axes, keepdims = case
    h.check_device(reduce_op("ReduceSum", axes, keepdims), [np.ones(shape, np.float32)])


# ---------------------------------------------------------------- SumElements


@given(shape=h.dims(0, 3), average=st.booleans(), dtype=h.float_dtypes, data=st.data())
def test_sum_elements(shape, average, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    op = h.make_op("SumElements", ["X"], ["sum"], average=average)
    reference = (lambda x: np.asarray(np.mean(x) if average else np.sum(x), dtype=dtype))
    h.check_output(op, [x], reference, output_dtypes=[dtype])
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_sum_elements_gradient_op():
    x = np.zeros((2, 3), np.float32)
    for average, value in ((False, 6.0), (True, 1.0)):
        op = h.make_op("SumElementsGradient", ["X", "dS"], ["dX"], average=average)
        h.check_output(op, [x, np.array(6.0, np.float32)],
                       lambda x, ds: np.full((2, 3), value, np.float32))


def test_sum_elements_cpu_matches_cuda():
    h.check_device(h.make_op("SumElements", ["X"], ["sum"]), [np.ones((2, 3), np.float32)])


# ------------------------------------------------------ RowwiseMax/ColwiseMax


@pytest.mark.parametrize("op_type,axis", [("RowwiseMax", -1), ("ColwiseMax", -2)])
@given(shape=h.dims(2, 3, 1, 4), dtype=h.float_dtypes, seed=st.integers(0, 1000),
       data=st.data())
def test_matrix_max(op_type, axis, shape, dtype, seed, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    op = h.make_op(op_type, ["X"], ["Y"])
    h.check_output(op, [x], lambda x: x.max(axis=axis), output_dtypes=[dtype])
    h.check_gradient(op, [distinct_values(tuple(shape), np.float64, seed)], [0])


def test_rowwise_max_gradient_shares_ties():
    x = np.array([[[1.0, 5.0, 5.0], [0.0, -1.0, 0.0]]])
    op = h.make_op("RowwiseMaxGradient", ["X", "Y", "dY"], ["dX"])
    h.check_output(op, [x, x.max(axis=2), np.array([[2.0, 3.0]])],
                   lambda x, y, dy: np.array([[[0, 2, 2], [3, 0, 3]]], dtype=np.float64))


def test_matrix_max_cpu_matches_cuda():
    h.check_device(h.make_op("RowwiseMax", ["X"], ["Y"]), [np.ones((2, 3, 4), np.float32)])


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("axes", [[2], [-3], [5]])
def test_reduce_axis_out_of_range_names_argument(axes):
    op = reduce_op("ReduceSum", axes, 1, ["data"])
    h.assert_op_error(op, [np.ones((2, 3), np.float32)], "axes", "'data'", "out of range")


def test_reduce_duplicate_axes():
    op = reduce_op("ReduceMean", [1, -1], 1)
    h.assert_op_error(op, [np.ones((2, 3), np.float32)], "axes", "twice")


def test_reduce_mean_rejects_integers():
    h.assert_op_error(reduce_op("ReduceMean", None, 1), [np.ones(3, np.int32)], "'X'", "int32")
    h.assert_op_error(reduce_op("ReduceSum", None, 1), [np.ones(3, np.uint8)], "'X'", "uint8")


def test_reduce_max_of_empty_dim():
    h.assert_op_error(reduce_op("ReduceMax", [0], 1), [np.ones((0, 2), np.float32)], "empty")


def test_reduce_gradient_rejects_wrong_dy():
    op = reduce_op("ReduceSumGradient", [0], 0, ["dY", "X", "Y"], ["dX"])
    x = np.ones((2, 3), np.float32)
    h.assert_op_error(op, [np.ones(2, np.float32), x, np.ones(3, np.float32)], "'dY'", "[3]")


def test_sum_elements_gradient_rejects_non_scalar():
    op = h.make_op("SumElementsGradient", ["X", "dS"], ["dX"])
    h.assert_op_error(op, [np.ones(3, np.float32), np.ones(2, np.float32)], "'dS'", "[2]")


def test_sum_elements_rejects_integers():
    op = h.make_op("SumElements", ["counts"], ["sum"])
    h.assert_op_error(op, [np.ones(3, np.int64)], "'counts'", "int64")


@pytest.mark.parametrize("shape", [(3,), (1, 2, 3, 4)])
def test_matrix_max_wrong_rank(shape):
    op = h.make_op("RowwiseMax", ["scores"], ["Y"])
    h.assert_op_error(op, [np.ones(shape, np.float32)], "'scores'", "[B, M, N]")


def test_matrix_max_gradient_rejects_wrong_dy():
    op = h.make_op("ColwiseMaxGradient", ["X", "Y", "dY"], ["dX"])
    x = np.ones((2, 3, 4), np.float32)
    h.assert_op_error(op, [x, np.ones((2, 4), np.float32), np.ones((2, 3), np.float32)],
                      "'dY'", "[2, 4]")


def test_rowwise_max_of_empty_rows():
    h.assert_op_error(h.make_op("RowwiseMax", ["X"], ["Y"]), [np.ones((2, 0), np.float32)],
                      "empty row")


if __name__ == "__main__":
    h.run_main(__file__)
