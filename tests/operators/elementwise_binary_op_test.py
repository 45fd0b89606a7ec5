"""Sub, Mul, Div (and Add through the same template) with numpy and legacy
broadcasting, their gradient ops, and SumReduceLike, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

NUMPY_OPS = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
}
op_names = st.sampled_from(sorted(NUMPY_OPS))

# Divisors stay this far from 0, so Div and its finite differences are tame.
NONZERO = st.one_of(st.floats(-2, -0.5, width=32), st.floats(0.5, 2, width=32))


def operands(draw, name, a_shape, b_shape, dtype):
    a = draw(h.arrays(a_shape, dtype))
    b = draw(h.arrays(b_shape, dtype, elements=NONZERO if name == "Div" else None))
    return a, b


def legacy_reference(fn, axis):
    """numpy reference of the legacy rule: B's dims line up with A's from axis."""
    def reference(a, b):
        if b.size == 1:
            return fn(a, b.reshape(()))
        start = a.ndim - b.ndim if axis == -1 else axis
        shape = (1,) * start + b.shape + (1,) * (a.ndim - start - b.ndim)
        return fn(a, b.reshape(shape)).astype(a.dtype)
    return reference


@given(op_names, h.broadcastable_shapes(), h.float_dtypes, st.data())
def test_float_forward_matches_numpy(name, shapes, dtype, data):
    a, b = operands(data.draw, name, shapes[0], shapes[1], dtype)
    op = h.make_op(name, ["A", "B"], ["C"])
    h.check_output(op, [a, b], lambda a, b: NUMPY_OPS[name](a, b).astype(dtype))
    h.check_inplace(op, [a, b])


@h.requires_cuda
@given(op_names, h.broadcastable_shapes(), h.float_dtypes, st.data())
def test_float_forward_cuda_matches_cpu(name, shapes, dtype, data):
    a, b = operands(data.draw, name, shapes[0], shapes[1], dtype)
    h.check_device(h.make_op(name, ["A", "B"], ["C"]), [a, b])


@given(st.sampled_from(["Add", "Sub", "Mul"]), h.broadcastable_shapes(),
       st.sampled_from([np.int32, np.int64]), st.data())
def test_integer_forward_matches_numpy(name, shapes, dtype, data):
    a, b = operands(data.draw, name, shapes[0], shapes[1], dtype)
    op = h.make_op(name, ["A", "B"], ["C"])
    h.check_output(op, [a, b], lambda a, b: NUMPY_OPS[name](a, b).astype(dtype))
    h.check_inplace(op, [a, b])


@pytest.mark.parametrize("name", sorted(NUMPY_OPS))
def test_uint64_forward_wraps_as_numpy(name):
    rng = np.random.RandomState(4)
    a = rng.randint(0, 2**63, size=(3, 4), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.randint(1, 2**40, size=(4,), dtype=np.uint64)
    with np.errstate(over="ignore"):
        want = (a // b) if name == "Div" else NUMPY_OPS[name](a, b)  # unsigned: // truncates
    got = h.run_op(h.make_op(name, ["A", "B"], ["C"]), [a, b])[0]
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.uint32])
@pytest.mark.parametrize("name", sorted(NUMPY_OPS))
def test_narrow_integer_forward_wraps_as_numpy(name, dtype):
    info = np.iinfo(dtype)
    rng = np.random.RandomState(3)
    a = rng.randint(info.min, info.max + 1, size=(3, 4)).astype(dtype)
    b = rng.randint(max(info.min, 1) if name == "Div" else info.min, info.max + 1,
                    size=(4,)).astype(dtype)
    if name == "Div":
        b[b == 0] = 1
        # C's division truncates toward zero (numpy's // floors; the same
        # for unsigned types, exact where float division might round up).
        if np.dtype(dtype).kind == "u":
            want = a.astype(np.uint64) // b.astype(np.uint64)
        else:
            want = (np.trunc(a.astype(np.int64) / b.astype(np.int64))).astype(np.int64)
    else:
        with np.errstate(over="ignore"):
            want = NUMPY_OPS[name](a.astype(np.int64), b.astype(np.int64))
    got = h.run_op(h.make_op(name, ["A", "B"], ["C"]), [a, b])[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want.astype(dtype))  # wrapped to the width


@given(op_names, h.broadcastable_shapes(), st.data())
def test_gradient_matches_finite_differences(name, shapes, data):
    a, b = operands(data.draw, name, shapes[0], shapes[1], np.float64)
    h.check_gradient(h.make_op(name, ["A", "B"], ["C"]), [a, b], [0, 1])


@given(op_names, h.dims(1, 4, 1, 4), h.float_dtypes, st.data())
def test_legacy_broadcast(name, shape, dtype, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = data.draw(st.integers(1, len(shape) - axis))
    b_shape = tuple(shape[axis:axis + length])
    if data.draw(st.booleans()):
        b_shape = (1,)  # a scalar B
    a, b = operands(data.draw, name, tuple(shape), b_shape, dtype)
    op = h.make_op(name, ["A", "B"], ["C"], broadcast=1, axis=axis)
    h.check_output(op, [a, b], legacy_reference(NUMPY_OPS[name], axis))
    h.check_inplace(op, [a, b])
    if dtype == np.float64:
        h.check_gradient(op, [a, b], [0, 1])


def test_legacy_broadcast_axis_str_and_suffix_matching():
    rng = np.random.RandomState(0)
    a = rng.uniform(-1, 1, (2, 3, 4, 5))
    b = rng.uniform(0.5, 1, (3,))
    op = h.make_op("Mul", ["A", "B"], ["C"], broadcast=1, axis_str="C", order="NCHW")
    h.check_output(op, [a, b], lambda a, b: a * b[:, None, None])
    b2 = rng.uniform(0.5, 1, (4, 5))
    op = h.make_op("Div", ["A", "B"], ["C"], broadcast=1)
    h.check_output(op, [a, b2], lambda a, b: a / b)
    h.check_gradient(op, [a[:1, :1], b2], [0, 1])


@pytest.mark.parametrize("a_shape,b_shape", [
    ((4, 24, 21, 23), (4, 24, 1, 1)),    # SE gate: broadcast along the last dims
    ((4, 24, 1, 1), (4, 24, 21, 23)),
    ((4, 24, 21, 23), (24, 1, 1)),       # a per-channel constant
    ((4, 21, 23, 24), (24,)),            # a bias over the last dim
    ((3, 1, 23, 40), (3, 30, 1, 40)),    # both broadcast, in different dims
    ((5, 1, 7000), (1, 6, 1)),
])
@pytest.mark.parametrize("name", sorted(NUMPY_OPS))
def test_large_broadcasts_split_over_threads_match_numpy(name, a_shape, b_shape):
    # Large enough that the rows are split over the intra-op threads, each
    # starting its odometer mid-tensor.
    rng = np.random.RandomState(len(a_shape) + len(b_shape))
    a = rng.randn(*a_shape).astype(np.float32)
    b = (rng.uniform(0.5, 2, b_shape) * rng.choice([-1, 1], b_shape)).astype(np.float32)
    out = h.run_op(h.make_op(name, ["A", "B"], ["C"]), [a, b])[0]
    np.testing.assert_allclose(out, NUMPY_OPS[name](a, b), rtol=1e-6, atol=1e-6)


def test_div_by_zero_follows_numpy():
    a = np.array([1.0, -1.0, 0.0, 2.5, np.inf], np.float32)
    b = np.array([0.0, 0.0, 0.0, -0.0, np.inf], np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = a / b
    got = h.run_op(h.make_op("Div", ["A", "B"], ["C"]), [a, b])[0]
    np.testing.assert_array_equal(got, expected)  # inf, -inf, nan, -inf, nan


def test_integer_div_truncates_and_wraps():
    a = np.array([7, -7, 7, -7, np.iinfo(np.int32).min], np.int32)
    b = np.array([2, 2, -2, -2, -1], np.int32)
    got = h.run_op(h.make_op("Div", ["A", "B"], ["C"]), [a, b])[0]
    # C's (and Caffe2's) truncation toward zero; the lowest / -1 wraps.
    np.testing.assert_array_equal(got, np.array([3, -3, -3, 3, np.iinfo(np.int32).min]))


def test_integer_div_by_zero_is_an_error():
    op = h.make_op("Div", ["A", "B"], ["C"])
    h.assert_op_error(op, [np.array([1, 2], np.int64), np.array([1, 0], np.int64)],
                      "division by zero", "'B'")


def test_gradient_makers_follow_caffe2():
    for name in ["Add", "Sub", "Mul"]:
        ops, grads = h.gradient_ops(h.make_op(name, ["A", "B"], ["C"], broadcast=1, axis=1))
        assert [op.type for op in ops] == [name + "Gradient"]
        assert list(ops[0].input) == ["C_grad", "A", "B"]
        assert list(ops[0].output) == ["A_grad", "B_grad"]
        assert sorted(arg.name for arg in ops[0].arg) == ["axis", "broadcast"]
        assert grads == ["A_grad", "B_grad"]
    ops, _ = h.gradient_ops(h.make_op("Div", ["A", "B"], ["C"]))
    assert ops[0].type == "DivGradient"
    assert list(ops[0].input) == ["C_grad", "A", "B", "C"]


def test_mul_in_place_cannot_be_differentiated():
    with pytest.raises(RuntimeError, match="Mul.*in place"):
        h.gradient_ops(h.make_op("Mul", ["A", "B"], ["A"]))


@pytest.mark.parametrize("name,broadcast", [("Add", 0), ("Sub", 0), ("Add", 1)])
def test_add_sub_in_place_over_a_differentiate(name, broadcast):
    """The gradient of an in-place Add/Sub takes A's shape from dC (A is
    overwritten); against finite differences, also with B broadcast."""
    rng = np.random.RandomState(2)
    a = rng.uniform(-1, 1, (2, 3))
    b = rng.uniform(-1, 1, (3,) if broadcast else (2, 3))
    op = h.make_op(name, ["A", "B"], ["A"], broadcast=broadcast)
    ops, _ = h.gradient_ops(op)
    assert "A" not in ops[0].input
    h.check_gradient(op, [a, b], [0, 1])


def test_div_gradient_legacy_three_input_form():
    # Older Caffe2 nets wrote DivGradient(B, C, dC).
    rng = np.random.RandomState(1)
    b = rng.uniform(0.5, 2, (2, 3))
    c = rng.uniform(-1, 1, (2, 3))
    dc = rng.uniform(-1, 1, (2, 3))
    op = h.make_op("DivGradient", ["B", "C", "dC"], ["dA", "dB"])
    h.check_output(op, [b, c, dc], lambda b, c, dc: [dc / b, -dc * c / b])
    assert h.check_inplace(op, [b, c, dc]) == 1  # dA over B, as its schema allows


@given(st.sampled_from(["AddGradient", "SubGradient", "MulGradient", "DivGradient"]),
       h.broadcastable_shapes(), st.data())
def test_gradient_ops_in_place_over_dc(name, shapes, data):
    a, b = operands(data.draw, "Div", shapes[0], shapes[1], np.float64)
    fn = NUMPY_OPS[name[:-len("Gradient")]]
    c = fn(a, b)
    dc = data.draw(h.arrays(c.shape, np.float64))
    names = ["dC", "A", "B"] + (["C"] if name == "DivGradient" else [])
    inputs = [dc, a, b] + ([c] if name == "DivGradient" else [])
    op = h.make_op(name, names, ["dA", "dB"])
    h.check_inplace(op, inputs)


@given(h.dims(2, 4), st.data())
def test_sum_reduce_like(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = data.draw(st.integers(1, len(shape) - axis))
    a = data.draw(h.arrays(tuple(shape), np.float64))
    b = np.zeros(shape[axis:axis + length])
    op = h.make_op("SumReduceLike", ["A", "B"], ["C"], axis=axis)
    other = tuple(range(axis)) + tuple(range(axis + length, len(shape)))
    h.check_output(op, [a, b], lambda a, b: a.sum(axis=other))


def test_bad_inputs_name_the_op_and_blobs():
    f = np.zeros((2, 3), np.float32)
    h.assert_op_error(h.make_op("Sub", ["A", "B"], ["C"]), [f, np.zeros(4, np.float32)],
                      "'A'", "'B'", "[2, 3]", "[4]")
    h.assert_op_error(h.make_op("Mul", ["A", "B"], ["C"]), [f, np.zeros((2, 3))],
                      "float32", "float64")
    h.assert_op_error(h.make_op("Div", ["A", "B"], ["C"]),
                      [np.ones(2, bool), np.ones(2, bool)], "'A'", "bool")
    h.assert_op_error(h.make_op("Sub", ["A", "B"], ["C"], broadcast=1, axis=1),
                      [f, np.zeros(2, np.float32)], "[2, 3]", "[2]")
    h.assert_op_error(h.make_op("Mul", ["A", "B"], ["B"]), [f, np.zeros(3, np.float32)],
                      "in place", "[2, 3]")
    h.assert_op_error(h.make_op("DivGradient", ["dC", "A", "B", "C"], ["dA", "dB"]),
                      [np.zeros((3, 3)), np.zeros((2, 3)), np.ones(3), np.zeros((2, 3))],
                      "'dC'", "[3, 3]")


if __name__ == "__main__":
    h.run_main(__file__)
