"""MatMul and BatchMatMul (and the gradients Caffe2 builds from them) through
the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h


def _prod(dims):
    return int(np.prod(dims, dtype=np.int64))


@st.composite
def matmul_case(draw, dtype=np.float64):
    """A and B for MatMul: each is the dims of its two matrix sides (1 or 2
    dims each) laid out per trans_a/trans_b, with axis_a/axis_b at the seam
    (sometimes negative)."""
    m_dims, k_dims, n_dims = (draw(h.dims(1, 2, 1, 3)) for _ in range(3))
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    a_dims = k_dims + m_dims if trans_a else m_dims + k_dims
    b_dims = n_dims + k_dims if trans_b else k_dims + n_dims
    axis_a = len(k_dims if trans_a else m_dims)
    axis_b = len(n_dims if trans_b else k_dims)
    if draw(st.booleans()):
        axis_a -= len(a_dims)
    if draw(st.booleans()):
        axis_b -= len(b_dims)
    a = draw(h.arrays(tuple(a_dims), dtype))
    b = draw(h.arrays(tuple(b_dims), dtype))
    return a, b, dict(trans_a=int(trans_a), trans_b=int(trans_b), axis_a=axis_a, axis_b=axis_b)


def matmul_reference(a, b, trans_a=0, trans_b=0, axis_a=1, axis_b=1):
    a2 = a.reshape(_prod(a.shape[:axis_a % a.ndim]), -1)
    b2 = b.reshape(_prod(b.shape[:axis_b % b.ndim]), -1)
    if trans_a:
        a2 = a2.T
    if trans_b:
        b2 = b2.T
    return (a2.astype(np.float64) @ b2.astype(np.float64)).astype(a.dtype)


@given(data=st.data(), dtype=h.float_dtypes)
def test_matmul_matches_numpy(data, dtype):
    a, b, args = data.draw(matmul_case(dtype))
    op = h.make_op("MatMul", ["A", "B"], ["Y"], **args)
    h.check_output(op, [a, b], lambda a, b: matmul_reference(a, b, **args),
                   output_dtypes=[dtype])


@given(data=st.data())
def test_matmul_gradient(data):
    a, b, args = data.draw(matmul_case())
    op = h.make_op("MatMul", ["A", "B"], ["Y"], **args)
    h.check_gradient(op, [a, b], [0, 1])


@given(data=st.data())
def test_matmul_gradient_float32(data):
    a, b, args = data.draw(matmul_case(np.float32))
    h.check_gradient(h.make_op("MatMul", ["A", "B"], ["Y"], **args), [a, b], [0, 1])


def test_matmul_gradient_is_made_of_matmuls():
    op = h.make_op("MatMul", ["A", "B"], ["Y"], trans_b=1)
    ops, input_grads = h.gradient_ops(op)
    assert [o.type for o in ops] == ["MatMul", "MatMul"]
    # The third input hands each gradient its operand's shape.
    assert list(ops[0].input) == ["Y_grad", "B", "A"] and list(ops[0].output) == ["A_grad"]
    assert list(ops[1].input) == ["Y_grad", "A", "B"] and list(ops[1].output) == ["B_grad"]
    assert list(input_grads) == ["A_grad", "B_grad"]


def test_matmul_third_input_gives_the_output_shape():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    like = np.zeros((2, 2, 2), np.float32)
    op = h.make_op("MatMul", ["A", "B", "like"], ["Y"])
    h.check_output(op, [a, b, like], lambda a, b, like: (a @ b).reshape(2, 2, 2))


@h.requires_cuda
@given(data=st.data())
def test_matmul_cpu_matches_cuda(data):
    a, b, args = data.draw(matmul_case(np.float32))
    h.check_device(h.make_op("MatMul", ["A", "B"], ["Y"], **args), [a, b])


# ---------------------------------------------------------------- BatchMatMul


def batch_matmul_reference(a, b, trans_a=0, trans_b=0):
    """numpy.matmul after transposing the last two dims of each operand of
    rank >= 2; a dot product of two vectors comes out as [1] (Caffe2)."""
    if trans_a and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if trans_b and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    y = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return np.reshape(y, (1,) if y.ndim == 0 else y.shape).astype(a.dtype)


@st.composite
def batch_case(draw, broadcast, dtype=np.float64):
    m, k, n = (draw(st.integers(1, 3)) for _ in range(3))
    trans_a, trans_b = draw(st.booleans()), draw(st.booleans())
    batch = draw(h.dims(0, 2, 1, 3))
    a_batch, b_batch = list(batch), list(batch)
    if broadcast:
        # Stretch some dims to 1 and drop some leading dims of one side.
        a_batch = [1 if draw(st.booleans()) else d for d in a_batch]
        b_batch = [1 if draw(st.booleans()) else d for d in b_batch]
        b_batch = b_batch[draw(st.integers(0, len(b_batch))):]
        if draw(st.booleans()):
            a_batch, b_batch = b_batch, a_batch
    a_dims = a_batch + ([k, m] if trans_a else [m, k])
    b_dims = b_batch + ([n, k] if trans_b else [k, n])
    if broadcast and draw(st.integers(0, 3)) == 0:
        a_dims = [k]  # a vector
    if broadcast and draw(st.integers(0, 3)) == 0:
        b_dims = [k]
    a = draw(h.arrays(tuple(a_dims), dtype))
    b = draw(h.arrays(tuple(b_dims), dtype))
    return a, b, dict(trans_a=int(trans_a), trans_b=int(trans_b))


@given(data=st.data(), dtype=h.float_dtypes, broadcast=st.booleans())
def test_batch_matmul_matches_numpy(data, dtype, broadcast):
    a, b, args = data.draw(batch_case(broadcast, dtype))
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], broadcast=int(broadcast), **args)
    h.check_output(op, [a, b], lambda a, b: batch_matmul_reference(a, b, **args),
                   output_dtypes=[dtype])


@given(data=st.data())
def test_batch_matmul_gradient(data):
    a, b, args = data.draw(batch_case(False))
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], **args)
    h.check_gradient(op, [a, b], [0, 1])


def test_batch_matmul_shared_b_uses_one_gemm_path():
    # A's batch in order against a single B (the folded-GEMM path).
    rng = np.random.RandomState(3)
    a = rng.uniform(-1, 1, (3, 2, 4, 5))
    b = rng.uniform(-1, 1, (5, 6))
    for trans_b in (0, 1):
        bb = b.T.copy() if trans_b else b
        op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], broadcast=1, trans_b=trans_b)
        h.check_output(op, [a, bb], lambda a, bb: np.matmul(a, b))


def test_batch_matmul_gradient_refused_with_broadcast():
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], broadcast=1)
    with pytest.raises(RuntimeError, match="broadcast"):
        h.gradient_ops(op)


@h.requires_cuda
@given(data=st.data(), broadcast=st.booleans())
def test_batch_matmul_cpu_matches_cuda(data, broadcast):
    a, b, args = data.draw(batch_case(broadcast, np.float32))
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], broadcast=int(broadcast), **args)
    h.check_device(op, [a, b])


# ------------------------------------------------------------------ bad input


def test_matmul_inner_dim_mismatch_names_blobs():
    op = h.make_op("MatMul", ["lhs", "rhs"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)],
                      "lhs", "rhs", "[2, 3]", "[4, 5]")


def test_matmul_axis_out_of_range_names_argument():
    op = h.make_op("MatMul", ["A", "B"], ["Y"], axis_b=3)
    h.assert_op_error(op, [np.ones((2, 3)), np.ones((3, 4))], "axis_b", "'B'")


def test_matmul_rejects_integer_and_mixed_types():
    op = h.make_op("MatMul", ["A", "B"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)],
                      "'A'", "int64")
    h.assert_op_error(op, [np.ones((2, 2), np.float32), np.ones((2, 2))], "'B'", "float64")


def test_matmul_like_input_with_wrong_size():
    op = h.make_op("MatMul", ["A", "B", "like"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3)), np.ones((3, 4)), np.ones((3, 3))], "'like'")


def test_batch_matmul_rank_mismatch_needs_broadcast():
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3, 4)), np.ones((4, 5))], "'A'", "'B'", "broadcast")
    h.assert_op_error(op, [np.ones(3), np.ones(3)], "rank >= 2")


def test_batch_matmul_batch_dims_must_match():
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3, 4)), np.ones((3, 4, 5))], "batch dims", "[2, 3, 4]")
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], broadcast=1)
    h.assert_op_error(op, [np.ones((2, 3, 4)), np.ones((3, 4, 5))], "do not broadcast")


def test_batch_matmul_inner_dim_mismatch():
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"], trans_a=1)
    h.assert_op_error(op, [np.ones((2, 3, 4)), np.ones((2, 4, 5))], "trans(A)", "K = 3",
                      "K = 4")


def test_batch_matmul_rejects_integers():
    op = h.make_op("BatchMatMul", ["A", "B"], ["Y"])
    h.assert_op_error(op, [np.ones((1, 2, 2), np.int32), np.ones((1, 2, 2), np.int32)],
                      "int32")


if __name__ == "__main__":
    h.run_main(__file__)
