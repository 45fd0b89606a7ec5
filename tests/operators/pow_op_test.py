"""Pow with a scalar or a tensor exponent (same shape or legacy broadcast),
and its gradient, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h
from doppio import _C

POSITIVE = st.floats(0.25, 2, width=32)


@given(h.dims(0, 4), h.float_dtypes, st.floats(-2, 3, width=32), st.data())
def test_scalar_exponent(shape, dtype, exponent, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=POSITIVE))
    op = h.make_op("Pow", ["X"], ["Y"], exponent=exponent)
    h.check_output(op, [x], lambda x: np.power(x, dtype(exponent)).astype(dtype),
                   rtol=1e-5 if dtype == np.float32 else None)
    h.check_inplace(op, [x])
    h.check_gradient(op, [x.astype(np.float64)], [0])


@h.requires_cuda
@given(h.dims(0, 4), h.float_dtypes, st.floats(-2, 3, width=32), st.data())
def test_scalar_exponent_cuda_matches_cpu(shape, dtype, exponent, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=POSITIVE))
    h.check_device(h.make_op("Pow", ["X"], ["Y"], exponent=exponent), [x])


def test_negative_bases_follow_numpy():
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    for exponent in [2.0, 3.0, 0.5, -1.0]:
        with np.errstate(all="ignore"):
            expected = np.power(x, np.float32(exponent))
        got = h.run_op(h.make_op("Pow", ["X"], ["Y"], exponent=exponent), [x])[0]
        np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=str(exponent))


@given(h.dims(0, 3), h.float_dtypes, st.data())
def test_tensor_exponent(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=POSITIVE))
    e = data.draw(h.arrays(tuple(shape), dtype, elements=st.floats(-2, 2, width=32)))
    op = h.make_op("Pow", ["X", "E"], ["Y"])
    h.check_output(op, [x, e], lambda x, e: np.power(x, e), rtol=1e-5)
    h.check_inplace(op, [x, e], rtol=1e-5)
    h.check_gradient(op, [x.astype(np.float64), e.astype(np.float64)], [0, 1])


@given(h.dims(1, 4, 1, 4), st.data())
def test_tensor_exponent_legacy_broadcast(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    length = data.draw(st.integers(1, len(shape) - axis))
    x = data.draw(h.arrays(tuple(shape), np.float64, elements=POSITIVE))
    e = data.draw(h.arrays(tuple(shape[axis:axis + length]), np.float64,
                           elements=st.floats(-2, 2)))
    expand = (slice(None),) * length + (None,) * (len(shape) - axis - length)
    op = h.make_op("Pow", ["X", "E"], ["Y"], broadcast=1, axis=axis)
    h.check_output(op, [x, e], lambda x, e: np.power(x, e[expand]))
    h.check_gradient(op, [x, e], [0, 1])
    # A one-element exponent broadcasts as a scalar.
    scalar = np.array([1.5])
    op = h.make_op("Pow", ["X", "E"], ["Y"], broadcast=1)
    h.check_output(op, [x, scalar], lambda x, e: np.power(x, 1.5))
    h.check_gradient(op, [x, scalar], [0, 1])


def test_in_place_scalar_exponent_gradient():
    # In place, the gradient reads Y = X^e and raises it to (e - 1) / e.
    x = np.array([0.5, 1.0, 2.0])
    op = h.make_op("Pow", ["X"], ["X"], exponent=3.0)
    grad_ops, grads = h.gradient_ops(op)
    with h._FreshWorkspace():
        _C.feed_blob("X", x.copy())
        _C.run_operator_once(op.SerializeToString())
        _C.feed_blob("X_grad", np.ones(3))
        for grad_op in grad_ops:
            _C.run_operator_once(grad_op.SerializeToString())
        got = _C.fetch_blob(grads[0])
    np.testing.assert_allclose(got, 3 * x ** 2)


def test_gradient_maker_ops():
    ops, _ = h.gradient_ops(h.make_op("Pow", ["X"], ["Y"], exponent=2.0))
    assert [op.type for op in ops] == ["Pow", "Mul", "Scale"]
    ops, _ = h.gradient_ops(h.make_op("Pow", ["X", "E"], ["Y"], broadcast=1))
    assert ops[-1].type == "SumReduceLike"
    with pytest.raises(RuntimeError, match="in place"):
        h.gradient_ops(h.make_op("Pow", ["X", "E"], ["X"]))


def test_bad_inputs():
    x = np.ones((2, 3), np.float32)
    h.assert_op_error(h.make_op("Pow", ["X"], ["Y"]), [x], "'exponent'")
    h.assert_op_error(h.make_op("Pow", ["X", "E"], ["Y"], exponent=2.0), [x, x], "'exponent'")
    h.assert_op_error(h.make_op("Pow", ["X", "E"], ["Y"]), [x, np.ones(3, np.float32)],
                      "'E'", "[3]", "[2, 3]", "broadcast=1")
    h.assert_op_error(h.make_op("Pow", ["X"], ["Y"], exponent=2.0), [np.ones(3, np.int32)],
                      "'X'", "int32")
    h.assert_op_error(h.make_op("Pow", ["X", "E"], ["Y"]), [x, np.ones((2, 3))],
                      "float32", "float64")


if __name__ == "__main__":
    h.run_main(__file__)
