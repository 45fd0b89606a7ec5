"""Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Elu, Softplus and their gradient
ops through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

# Inputs of the ops with a kink at 0 are kept this far from it, so central
# differences never straddle the kink.
KINK_MARGIN = 0.05


def away_from_zero(x, margin=KINK_MARGIN):
    sign = np.where(x >= 0, 1, -1).astype(x.dtype)
    return (x + sign * margin).astype(x.dtype)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


# name -> (reference forward f(x, alpha), reference derivative in terms of
# x, default alpha or None when the op takes none, has a kink at 0)
ACTIVATIONS = {
    "Relu": (lambda x, a: np.maximum(x, 0), lambda x, a: (x > 0) * 1.0, None, True),
    "LeakyRelu": (lambda x, a: np.where(x > 0, x, a * x),
                  lambda x, a: np.where(x > 0, 1.0, a), 0.01, True),
    "Sigmoid": (lambda x, a: sigmoid(x), lambda x, a: sigmoid(x) * (1 - sigmoid(x)), None, False),
    "Tanh": (lambda x, a: np.tanh(x), lambda x, a: 1 - np.tanh(x) ** 2, None, False),
    "Elu": (lambda x, a: np.where(x < 0, a * (np.exp(x) - 1), x),
            lambda x, a: np.where(x < 0, a * np.exp(x), 1.0), 1.0, True),
    "Softplus": (lambda x, a: np.logaddexp(0, x.astype(np.float64)),
                 lambda x, a: sigmoid(x), None, False),
}
names = st.sampled_from(sorted(ACTIVATIONS))


@st.composite
def activation_case(draw, dtype=None):
    """(op name, args dict, alpha for the reference, input array)."""
    name = draw(names)
    forward, _, default_alpha, kinked = ACTIVATIONS[name]
    dtype = dtype or draw(h.float_dtypes)
    shape = tuple(draw(h.dims(0, 4)))
    x = draw(h.arrays(shape, dtype, elements=st.floats(-3, 3, width=32)))
    if kinked:
        x = away_from_zero(x)
    args = {}
    alpha = default_alpha
    if default_alpha is not None and draw(st.booleans()):
        # The op reads alpha as a float32; so does the reference.
        alpha = float(np.float32(draw(st.floats(0.05, 2.0))))
        args["alpha"] = alpha
    return name, args, alpha, x


@given(activation_case())
def test_forward_matches_numpy(case):
    name, args, alpha, x = case
    forward = ACTIVATIONS[name][0]
    op = h.make_op(name, ["X"], ["Y"], **args)
    h.check_output(op, [x], lambda x: forward(x, alpha).astype(x.dtype),
                   output_dtypes=[x.dtype])
    assert h.check_inplace(op, [x]) == 1


@h.requires_cuda
@given(activation_case())
def test_forward_cuda_matches_cpu(case):
    name, args, _, x = case
    h.check_device(h.make_op(name, ["X"], ["Y"], **args), [x])


@given(activation_case(dtype=np.float64))
def test_gradient_matches_finite_differences(case):
    name, args, _, x = case
    h.check_gradient(h.make_op(name, ["X"], ["Y"], **args), [x], [0])


@given(activation_case())
def test_gradient_op_matches_numpy(case):
    """<Op>Gradient(Y, dY) against the derivative written in terms of X."""
    name, args, alpha, x = case
    forward, derivative, _, _ = ACTIVATIONS[name]
    rng = np.random.RandomState(x.size)
    y = forward(x, alpha).astype(x.dtype)
    dy = rng.uniform(-1, 1, x.shape).astype(x.dtype)
    op = h.make_op(name + "Gradient", ["Y", "dY"], ["dX"], **args)
    h.check_output(op, [y, dy], lambda y, dy: (dy * derivative(x, alpha)).astype(x.dtype),
                   atol=1e-4 if x.dtype == np.float32 else 1e-7)
    assert h.check_inplace(op, [y, dy]) == 1


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_device(name):
    x = away_from_zero(np.linspace(-2, 2, 12).astype(np.float32).reshape(3, 4))
    h.check_device(h.make_op(name, ["X"], ["Y"]), [x])


def test_saturated_inputs_stay_finite():
    x = np.array([-1000.0, -50.0, 0.5, 50.0, 1000.0], dtype=np.float32)
    sig, soft = (h.run_op(h.make_op(n, ["X"], ["Y"]), [x])[0] for n in ("Sigmoid", "Softplus"))
    wide = x.astype(np.float64)
    small = np.exp(-np.abs(wide))  # never overflows
    np.testing.assert_allclose(sig, np.where(wide >= 0, 1, small) / (1 + small), rtol=1e-5)
    np.testing.assert_allclose(soft, np.logaddexp(0, wide), rtol=1e-5)
    assert np.all(np.isfinite(sig)) and np.all(np.isfinite(soft))


def test_gradient_maker_uses_forward_output_and_arguments():
    op = h.make_op("LeakyRelu", ["X"], ["Y"], alpha=0.3)
    ops, grads = h.gradient_ops(op)
    assert len(ops) == 1 and ops[0].type == "LeakyReluGradient"
    assert list(ops[0].input) == ["Y", "Y_grad"] and list(ops[0].output) == ["X_grad"]
    assert [a.name for a in ops[0].arg] == ["alpha"] and abs(ops[0].arg[0].f - 0.3) < 1e-7
    assert grads == ["X_grad"]


# ---------------------------------------------------------------- PRelu


def prelu_reference(x, slope, order):
    if slope.size == 1:
        w = slope.reshape(())
    elif order == "NCHW":
        w = slope.reshape((1, -1) + (1,) * (x.ndim - 2))
    else:
        w = slope.reshape((1,) * (x.ndim - 1) + (-1,))
    return np.where(x > 0, x, w * x)


@st.composite
def prelu_case(draw, dtype=None):
    dtype = dtype or draw(h.float_dtypes)
    order = draw(st.sampled_from(["NCHW", "NHWC"]))
    shape = tuple(draw(h.dims(2, 4)))
    channels = shape[1] if order == "NCHW" else shape[-1]
    shared = draw(st.booleans())
    x = away_from_zero(draw(h.arrays(shape, dtype)))
    slope = draw(h.arrays((1 if shared else channels,), dtype,
                          elements=st.floats(-0.5, 1.5, width=32)))
    return x, slope, order


@given(prelu_case())
def test_prelu_matches_numpy(case):
    x, slope, order = case
    op = h.make_op("PRelu", ["X", "Slope"], ["Y"], order=order)
    h.check_output(op, [x, slope], lambda x, s: prelu_reference(x, s, order).astype(x.dtype))
    assert h.check_inplace(op, [x, slope]) == 1


@h.requires_cuda
@given(prelu_case())
def test_prelu_cuda_matches_cpu(case):
    x, slope, order = case
    h.check_device(h.make_op("PRelu", ["X", "Slope"], ["Y"], order=order), [x, slope])


@given(prelu_case(dtype=np.float64))
def test_prelu_gradient(case):
    x, slope, order = case
    op = h.make_op("PRelu", ["X", "Slope"], ["Y"], order=order)
    h.check_gradient(op, [x, slope], [0, 1])


def test_prelu_device():
    x = away_from_zero(np.linspace(-1, 1, 24).reshape(2, 3, 4)).astype(np.float32)
    h.check_device(h.make_op("PRelu", ["X", "S"], ["Y"]), [x, np.float32([0.1, 0.2, 0.3])])


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_integer_input_is_refused(name):
    h.assert_op_error(h.make_op(name, ["X"], ["Y"]), [np.arange(4, dtype=np.int32)],
                      "'X'", "int32")


def test_gradient_shape_mismatch_names_both_blobs():
    op = h.make_op("ReluGradient", ["Y", "dY"], ["dX"])
    h.assert_op_error(op, [np.ones((2, 3)), np.ones((3, 2))], "'Y'", "'dY'", "[2, 3]", "[3, 2]")


def test_prelu_slope_count_mismatch():
    op = h.make_op("PRelu", ["X", "Slope"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3, 4)), np.ones(4)], "'Slope'", "3 channels")


def test_prelu_per_channel_slope_needs_a_channel_axis():
    op = h.make_op("PRelu", ["X", "Slope"], ["Y"])
    h.assert_op_error(op, [np.ones(5), np.ones(5)], "'X'", "channel axis")


def test_prelu_bad_order():
    op = h.make_op("PRelu", ["X", "Slope"], ["Y"], order="CHWN")
    h.assert_op_error(op, [np.ones((2, 3)), np.ones(1)], "order", "CHWN")


def test_prelu_gradient_refuses_in_place_forward():
    op = h.make_op("PReluGradient", ["X", "dY", "X", "Slope"], ["dX", "dSlope"])
    h.assert_op_error(op, [np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), np.ones(1)],
                      "in place")


# ---- Swish: y = x sigmoid(x); its gradient reads (X, Y, dY) ----


@given(h.dims(0, 4), h.float_dtypes, st.data())
def test_swish_matches_numpy(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=st.floats(-6, 6, width=32)))
    h.check_output(h.make_op("Swish", ["X"], ["Y"]), [x],
                   lambda x: (x * sigmoid(x)).astype(dtype))


@given(h.dims(0, 3), st.data())
def test_swish_gradient_matches_finite_differences(shape, data):
    x = data.draw(h.arrays(tuple(shape), np.float64, elements=st.floats(-4, 4, width=32)))
    h.check_gradient(h.make_op("Swish", ["X"], ["Y"]), [x], [0])


@given(h.dims(0, 3), st.data())
def test_swish_gradient_op_in_place_matches_numpy(shape, data):
    x = data.draw(h.arrays(tuple(shape), np.float64, elements=st.floats(-4, 4, width=32)))
    dy = data.draw(h.arrays(tuple(shape), np.float64, elements=st.floats(-1, 1, width=32)))
    y = x * sigmoid(x)
    derivative = sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x))
    op = h.make_op("SwishGradient", ["X", "Y", "dY"], ["dY"])
    h.check_output(op, [x, y, dy], lambda x, y, dy: dy * derivative)


def test_swish_in_place_cannot_be_differentiated():
    with pytest.raises(RuntimeError, match="in place"):
        h.gradient_ops(h.make_op("Swish", ["X"], ["X"]))


if __name__ == "__main__":
    h.run_main(__file__)
