"""Softmax, LogSoftmax and their gradient ops through the op harness,
against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

OPS = ["Softmax", "LogSoftmax"]


def reference(x, axis, log):
    """Rows are the dims before `axis`, as Caffe2 coerces X to 2-D."""
    axis = axis % x.ndim
    rows = x.astype(np.float64).reshape(int(np.prod(x.shape[:axis])), -1)
    shifted = rows - rows.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    out = log_softmax if log else np.exp(log_softmax)
    return out.reshape(x.shape).astype(x.dtype)


@st.composite
def softmax_case(draw, dtype=None):
    dtype = dtype or draw(h.float_dtypes)
    shape = tuple(draw(h.dims(1, 4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = draw(h.arrays(shape, dtype, elements=st.floats(-5, 5, width=32)))
    return draw(st.sampled_from(OPS)), x, axis


def make(name, axis=None, inputs=("X",), outputs=("Y",)):
    args = {} if axis is None else {"axis": axis}
    return h.make_op(name, list(inputs), list(outputs), **args)


@given(softmax_case())
def test_forward_matches_numpy(case):
    name, x, axis = case
    h.check_output(make(name, axis), [x], lambda x: reference(x, axis, name == "LogSoftmax"),
                   output_dtypes=[x.dtype])


@h.requires_cuda
@given(softmax_case())
def test_forward_cuda_matches_cpu(case):
    name, x, axis = case
    h.check_device(make(name, axis), [x])


@given(st.sampled_from(OPS), h.dims(2, 4))
def test_default_axis_is_one(name, shape):
    x = np.random.RandomState(len(shape)).uniform(-2, 2, shape)
    h.check_output(make(name), [x], lambda x: reference(x, 1, name == "LogSoftmax"))


@given(softmax_case(dtype=np.float64))
def test_gradient_matches_finite_differences(case):
    name, x, axis = case
    h.check_gradient(make(name, axis), [x], [0])


@given(softmax_case())
def test_gradient_op_matches_numpy(case):
    name, x, axis = case
    log = name == "LogSoftmax"
    y = reference(x, axis, log)
    dy = np.random.RandomState(x.size).uniform(-1, 1, x.shape).astype(x.dtype)

    def expected(y, dy):
        # Jacobian-vector product per row, built from the explicit Jacobian.
        a = axis % x.ndim
        n = int(np.prod(x.shape[:a]))
        out = np.empty((n, x.size // n))
        for r, (yr, dyr) in enumerate(zip(y.reshape(n, -1).astype(np.float64),
                                          dy.reshape(n, -1).astype(np.float64))):
            p = np.exp(yr) if log else yr
            if log:
                jacobian = np.eye(p.size) - p[np.newaxis, :]   # d log p_i / d x_j
            else:
                jacobian = np.diag(p) - np.outer(p, p)          # d p_i / d x_j
            out[r] = jacobian.T @ dyr
        return out.reshape(x.shape).astype(x.dtype)

    op = make(name + "Gradient", axis, inputs=("Y", "dY"), outputs=("dX",))
    h.check_output(op, [y, dy], expected, atol=1e-4 if x.dtype == np.float32 else 1e-7)


def test_gradient_maker_feeds_output_and_axis():
    ops, grads = h.gradient_ops(make("Softmax", axis=2))
    assert [o.type for o in ops] == ["SoftmaxGradient"]
    assert list(ops[0].input) == ["Y", "Y_grad"] and list(ops[0].output) == ["X_grad"]
    assert [(a.name, a.i) for a in ops[0].arg] == [("axis", 2)]
    assert grads == ["X_grad"]


@pytest.mark.parametrize("name", OPS)
def test_large_logits_stay_finite(name):
    x = np.array([[1000.0, 0.0, -1000.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    (y,) = h.run_op(make(name), [x])
    assert np.all(np.isfinite(y))
    h.check_output(make(name), [x], lambda x: reference(x, 1, name == "LogSoftmax"))


@pytest.mark.parametrize("name", OPS)
def test_device(name):
    h.check_device(make(name), [np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)])


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize("name", OPS)
def test_axis_out_of_range(name):
    h.assert_op_error(make(name, axis=2), [np.ones((2, 3), np.float32)], "axis 2", "'X'",
                      "[2, 3]")


@pytest.mark.parametrize("name", OPS)
def test_scalar_input_has_no_axis_1(name):
    h.assert_op_error(make(name), [np.float32(1.0).reshape(())], "axis 1", "rank 0")


@pytest.mark.parametrize("name", OPS)
def test_integer_input_is_refused(name):
    h.assert_op_error(make(name), [np.ones((2, 3), np.int64)], "'X'", "int64")


def test_gradient_shape_mismatch():
    op = make("SoftmaxGradient", inputs=("Y", "dY"), outputs=("dX",))
    h.assert_op_error(op, [np.ones((2, 3)), np.ones((2, 4))], "'dY'", "[2, 4]", "[2, 3]")


if __name__ == "__main__":
    h.run_main(__file__)
