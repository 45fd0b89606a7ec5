"""FC, FCTransposed and their gradients through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h


@st.composite
def fc_case(draw, transposed=False, dtype=np.float64):
    """X, W, b and the axis arguments of one FC: X splits at `axis` into
    batch dims and K dims; W is n_dims + k_dims (or k_dims + n_dims for
    FCTransposed) with axis_w between them. Axes are sometimes negative."""
    x_dims = draw(h.dims(1, 4, 1, 4))
    axis = draw(st.integers(0, len(x_dims) - 1))
    k_dims = x_dims[axis:]
    n_dims = draw(h.dims(1, 2, 1, 4))
    w_dims = k_dims + n_dims if transposed else n_dims + k_dims
    axis_w = len(k_dims) if transposed else len(n_dims)
    if draw(st.booleans()):
        axis -= len(x_dims)
    if draw(st.booleans()):
        axis_w -= len(w_dims)
    x = draw(h.arrays(tuple(x_dims), dtype))
    w = draw(h.arrays(tuple(w_dims), dtype))
    b = draw(h.arrays((int(np.prod(n_dims)),), dtype))
    return x, w, b, axis, axis_w


def fc_reference(x, w, b, axis, axis_w, transposed=False):
    axis = axis % x.ndim
    axis_w = axis_w % w.ndim
    batch = x.shape[:axis]
    x2 = x.reshape(int(np.prod(batch)), -1)
    w2 = w.reshape(int(np.prod(w.shape[:axis_w])), -1)
    if not transposed:
        w2 = w2.T  # stored [N, K]
    y = x2.astype(np.float64) @ w2.astype(np.float64) + b.astype(np.float64)
    return y.reshape(batch + (w2.shape[1],)).astype(x.dtype)


@pytest.mark.parametrize("op_type", ["FC", "FCTransposed"])
@given(data=st.data(), dtype=h.float_dtypes)
def test_fc_matches_numpy(op_type, data, dtype):
    transposed = op_type == "FCTransposed"
    x, w, b, axis, axis_w = data.draw(fc_case(transposed, dtype))
    op = h.make_op(op_type, ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w)
    h.check_output(op, [x, w, b],
                   lambda x, w, b: fc_reference(x, w, b, axis, axis_w, transposed),
                   output_dtypes=[dtype])


@pytest.mark.parametrize("op_type", ["FC", "FCTransposed"])
@h.requires_cuda
@given(data=st.data())
def test_fc_cpu_matches_cuda(op_type, data):
    x, w, b, axis, axis_w = data.draw(fc_case(op_type == "FCTransposed", np.float32))
    op = h.make_op(op_type, ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w)
    h.check_device(op, [x, w, b])


@pytest.mark.parametrize("op_type", ["FC", "FCTransposed"])
@h.requires_cuda
@given(data=st.data())
def test_fused_relu_fc_cpu_matches_cuda(op_type, data):
    # fusion_type 1 (written by the fusion pass) must mean Relu on both
    # devices: the CUDA op reads FC's arguments through the CPU op's reader.
    x, w, b, axis, axis_w = data.draw(fc_case(op_type == "FCTransposed", np.float32))
    op = h.make_op(op_type, ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w, fusion_type=1)
    h.check_device(op, [x, w, b])


def test_fc_default_axes_flatten_trailing_dims():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
    w = np.linspace(-1, 1, 5 * 12).astype(np.float32).reshape(5, 12)
    b = np.arange(5, dtype=np.float32)
    op = h.make_op("FC", ["X", "W", "b"], ["Y"])
    h.check_output(op, [x, w, b], lambda x, w, b: x.reshape(2, 12) @ w.T + b)


@pytest.mark.parametrize("op_type", ["FC", "FCTransposed"])
@given(data=st.data())
def test_fc_gradient(op_type, data):
    x, w, b, axis, axis_w = data.draw(fc_case(op_type == "FCTransposed"))
    op = h.make_op(op_type, ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w)
    h.check_gradient(op, [x, w, b], [0, 1, 2])


@given(data=st.data())
def test_fc_gradient_float32(data):
    x, w, b, axis, axis_w = data.draw(fc_case(False, np.float32))
    op = h.make_op("FC", ["X", "W", "b"], ["Y"], axis=axis, axis_w=axis_w)
    h.check_gradient(op, [x, w, b], [0, 1, 2])


def test_fc_gradient_maker_names_caffe2_outputs():
    op = h.make_op("FC", ["X", "W", "b"], ["Y"], axis=2)
    ops, input_grads = h.gradient_ops(op)
    assert len(ops) == 1
    grad = ops[0]
    assert grad.type == "FCGradient"
    assert list(grad.input) == ["X", "W", "Y_grad"]
    assert list(grad.output) == ["W_grad", "b_grad", "X_grad"]
    assert [a.name for a in grad.arg] == ["axis"] and grad.arg[0].i == 2
    assert list(input_grads) == ["X_grad", "W_grad", "b_grad"]


@pytest.mark.parametrize("op_type", ["FCGradient", "FCTransposedGradient"])
@given(data=st.data(), dtype=h.float_dtypes)
def test_fc_gradient_op_without_dx(op_type, data, dtype):
    transposed = op_type == "FCTransposedGradient"
    x, w, _, axis, axis_w = data.draw(fc_case(transposed, dtype))
    y_shape = fc_reference(x, w, np.zeros(1), axis, axis_w, transposed).shape
    dy = data.draw(h.arrays(y_shape, dtype))

    def reference(x, w, dy):
        x2 = x.reshape(int(np.prod(x.shape[:axis % x.ndim])), -1)
        dy2 = dy.reshape(x2.shape[0], -1)
        dw = dy2.T @ x2 if not transposed else x2.T @ dy2
        return [dw.reshape(w.shape), dy2.sum(axis=0)]

    op = h.make_op(op_type, ["X", "W", "dY"], ["dW", "db"], axis=axis, axis_w=axis_w)
    h.check_output(op, [x, w, dy], reference, output_dtypes=[dtype, dtype])


def test_fc_empty_batch():
    x = np.zeros((0, 3), np.float32)
    w = np.ones((2, 3), np.float32)
    b = np.ones(2, np.float32)
    op = h.make_op("FC", ["X", "W", "b"], ["Y"])
    h.check_output(op, [x, w, b], lambda x, w, b: np.zeros((0, 2), np.float32))
    grad = h.make_op("FCGradient", ["X", "W", "dY"], ["dW", "db", "dX"])
    h.check_output(grad, [x, w, np.zeros((0, 2), np.float32)],
                   lambda x, w, dy: [np.zeros((2, 3)), np.zeros(2), np.zeros((0, 3))])


# ------------------------------------------------------------------ bad input


def _fc_inputs(x_shape=(2, 3), w_shape=(4, 3), b_shape=(4,), dtype=np.float32):
    return [np.ones(x_shape, dtype), np.ones(w_shape, dtype), np.ones(b_shape, dtype)]


def test_fc_k_mismatch_names_blobs():
    op = h.make_op("FC", ["data", "fc_w", "fc_b"], ["Y"])
    h.assert_op_error(op, _fc_inputs(w_shape=(4, 5)), "data", "fc_w", "[2, 3]", "[4, 5]")


def test_fc_transposed_k_mismatch():
    op = h.make_op("FCTransposed", ["X", "W", "b"], ["Y"])
    h.assert_op_error(op, _fc_inputs(w_shape=(4, 3)), "'W'", "K = 3")


def test_fc_bias_size_mismatch_names_bias():
    op = h.make_op("FC", ["X", "W", "fc_b"], ["Y"])
    h.assert_op_error(op, _fc_inputs(b_shape=(3,)), "fc_b", "[3]", "[4]")
    h.assert_op_error(op, _fc_inputs(b_shape=(1, 4)), "fc_b", "[1, 4]")


@pytest.mark.parametrize("arg,value", [("axis", 2), ("axis", -3), ("axis_w", 5)])
def test_fc_axis_out_of_range_names_argument(arg, value):
    op = h.make_op("FC", ["X", "W", "b"], ["Y"], **{arg: value})
    h.assert_op_error(op, _fc_inputs(), arg, "out of range")


def test_fc_rejects_integer_and_mixed_types():
    op = h.make_op("FC", ["X", "W", "b"], ["Y"])
    h.assert_op_error(op, _fc_inputs(dtype=np.int32), "'X'", "int32")
    x, w, b = _fc_inputs()
    h.assert_op_error(op, [x, w.astype(np.float64), b], "'W'", "float64", "float32")


def test_fc_gradient_rejects_wrong_dy():
    op = h.make_op("FCGradient", ["X", "W", "dY"], ["dW", "db", "dX"])
    x, w, _ = _fc_inputs()
    h.assert_op_error(op, [x, w, np.ones((2, 5), np.float32)], "'dY'", "[2, 5]", "[2, 4]")


def test_fc_wrong_input_count():
    op = h.make_op("FC", ["X", "W"], ["Y"])
    h.assert_op_error(op, _fc_inputs()[:2], "3 inputs")


if __name__ == "__main__":
    h.run_main(__file__)
