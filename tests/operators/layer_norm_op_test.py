"""LayerNorm and InstanceNorm with their gradients, through the op harness
against numpy."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h

EPSILONS = st.sampled_from([1e-5, 1e-3, 0.1])


def _f32(value):
    # The ops read epsilon as float32; so must the references.
    return float(np.float32(value))


# ---------------------------------------------------------------- LayerNorm


def layer_norm_reference(x, axis, epsilon, gamma=None, beta=None):
    x = x.astype(np.float64)
    axis = axis % x.ndim
    rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
    mean = rows.mean(axis=1, keepdims=True)
    std = np.sqrt(rows.var(axis=1, keepdims=True) + _f32(epsilon))
    y = (rows - mean) / std
    if gamma is not None:
        y = y * gamma.reshape(1, -1) + beta.reshape(1, -1)
    stat_shape = x.shape[:axis] + (1,)
    return [y.reshape(x.shape), mean.reshape(stat_shape), std.reshape(stat_shape)]


@st.composite
def layer_norm_case(draw, dtype=None, affine=None):
    shape = draw(h.dims(1, 4, 1, 4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    dtype = dtype or draw(h.float_dtypes)
    affine = draw(st.booleans()) if affine is None else affine
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    x = (rng.randn(*shape) * 3 + 1).astype(dtype)
    features = int(np.prod(shape[axis % len(shape):]))
    inputs = [x]
    if affine:
        inputs += [rng.uniform(0.5, 2, features).astype(dtype), rng.randn(features).astype(dtype)]
    return inputs, axis


def layer_norm_op(inputs, axis, epsilon):
    names = ["X", "gamma", "beta"][:len(inputs)]
    return h.make_op("LayerNorm", names, ["Y", "mean", "std"], axis=axis, epsilon=epsilon,
                     elementwise_affine=int(len(inputs) == 3))


@given(layer_norm_case(), EPSILONS)
def test_layer_norm_matches_numpy(case, epsilon):
    inputs, axis = case
    op = layer_norm_op(inputs, axis, epsilon)
    h.check_output(op, inputs, lambda x, *gb: layer_norm_reference(x, axis, epsilon, *gb))
    assert h.check_inplace(op, inputs) == 0


@given(layer_norm_case(dtype=np.float64), EPSILONS)
def test_layer_norm_gradient(case, epsilon):
    inputs, axis = case
    op = layer_norm_op(inputs, axis, epsilon)
    h.check_gradient(op, inputs, list(range(len(inputs))), outputs_with_grad=[0])
    grad_ops, _ = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == ["LayerNormGradient"]
    assert list(grad_ops[0].input)[:5] == ["Y_grad", "Y", "mean", "std", "X"]


def test_layer_norm_rows_split_over_threads():
    # Enough rows that they are split over the intra-op threads; in place too.
    rng = np.random.RandomState(4)
    x = (rng.randn(8, 56, 56, 96) * 3 + 1).astype(np.float32)
    gamma = rng.randn(96).astype(np.float32)
    beta = rng.randn(96).astype(np.float32)
    op = h.make_op("LayerNorm", ["X", "gamma", "beta"], ["Y", "mean", "std"], axis=-1,
                   epsilon=1e-6, elementwise_affine=1)
    h.check_output(op, [x, gamma, beta],
                   lambda *a: layer_norm_reference(a[0], 3, 1e-6, a[1], a[2]),
                   rtol=1e-5, atol=1e-5)
    h.check_inplace(op, [x, gamma, beta], rtol=0, atol=0)


def test_layer_norm_bad_inputs():
    x = np.ones((2, 3, 4), np.float32)
    plain = h.make_op("LayerNorm", ["X"], ["Y", "mean", "std"], axis=3)
    h.assert_op_error(plain, [x], "axis 3", "'X'")
    h.assert_op_error(h.make_op("LayerNorm", ["X"], ["Y", "mean", "std"]),
                      [np.float32(1.0)], "'X'", "rank")
    affine = h.make_op("LayerNorm", ["X", "g", "b"], ["Y", "mean", "std"],
                       elementwise_affine=1)
    h.assert_op_error(affine, [x, np.ones(11, np.float32), np.ones(12, np.float32)],
                      "'g'", "12 elements")
    h.assert_op_error(h.make_op("LayerNorm", ["X"], ["Y", "mean", "std"],
                                elementwise_affine=1), [x], "3 inputs")
    h.assert_op_error(h.make_op("LayerNorm", ["X"], ["Y", "mean", "std"]),
                      [x.astype(np.int32)], "'X'", "int32")
    grad = h.make_op("LayerNormGradient", ["dY", "Y", "mean", "std", "X"], ["dX"])
    h.assert_op_error(grad, [np.ones((2, 3, 5), np.float32), x, np.ones((2, 1), np.float32),
                             np.ones((2, 1), np.float32), x], "'dY'")


# ------------------------------------------------------------- InstanceNorm


def instance_norm_reference(x, scale, bias, epsilon, order):
    x = x.astype(np.float64)
    if order == "NHWC":
        x = np.moveaxis(x, -1, 1)
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + _f32(epsilon))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean) * inv_std * scale.reshape(shape) + bias.reshape(shape)
    if order == "NHWC":
        y = np.moveaxis(y, 1, -1)
    n, c = x.shape[:2]
    return [y, mean.reshape(n, c), inv_std.reshape(n, c)]


@st.composite
def instance_norm_case(draw, dtype=None):
    order = draw(st.sampled_from(["NCHW", "NHWC"]))
    shape = draw(h.dims(3, 5, 1, 4))
    dtype = dtype or draw(h.float_dtypes)
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    C = shape[1] if order == "NCHW" else shape[-1]
    x = (rng.randn(*shape) * 2 - 1).astype(dtype)
    scale = rng.uniform(0.5, 2, C).astype(dtype)
    bias = rng.randn(C).astype(dtype)
    return [x, scale, bias], order


@given(instance_norm_case(), EPSILONS, st.integers(1, 3))
def test_instance_norm_matches_numpy(case, epsilon, num_outputs):
    inputs, order = case
    outputs = ["Y", "saved_mean", "saved_inv_stdev"][:num_outputs]
    op = h.make_op("InstanceNorm", ["X", "scale", "bias"], outputs, epsilon=epsilon,
                   order=order)
    h.check_output(op, inputs,
                   lambda *a: instance_norm_reference(*a, epsilon, order)[:num_outputs])
    assert h.check_inplace(op, inputs) == 1


@given(instance_norm_case(dtype=np.float64), EPSILONS, st.integers(1, 3))
def test_instance_norm_gradient(case, epsilon, num_outputs):
    inputs, order = case
    outputs = ["Y", "saved_mean", "saved_inv_stdev"][:num_outputs]
    op = h.make_op("InstanceNorm", ["X", "scale", "bias"], outputs, epsilon=epsilon,
                   order=order)
    h.check_gradient(op, inputs, [0, 1, 2], outputs_with_grad=[0])
    grad_ops, _ = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == ["InstanceNormGradient"]
    assert len(grad_ops[0].input) == (6 if num_outputs == 3 else 4)


def test_instance_norm_bad_inputs():
    x = np.ones((2, 3, 4), np.float32)
    c3 = np.ones(3, np.float32)
    op = h.make_op("InstanceNorm", ["X", "scale", "bias"], ["Y"])
    h.assert_op_error(op, [np.ones((2, 3), np.float32), c3, c3], "'X'", "rank")
    h.assert_op_error(op, [x, np.ones(4, np.float32), c3], "'scale'")
    h.assert_op_error(op, [x, c3, np.ones(2, np.float32)], "'bias'")
    h.assert_op_error(h.make_op("InstanceNorm", ["X", "scale", "bias"], ["Y"], order="NHWC"),
                      [x, c3, c3], "'scale'", "4 elements")
    h.assert_op_error(h.make_op("InstanceNorm", ["X", "scale", "bias"], ["Y"], order="XYZ"),
                      [x, c3, c3], "order", "XYZ")
    h.assert_op_error(op, [x.astype(np.uint8), c3, c3], "'X'", "uint8")
    grad = h.make_op("InstanceNormGradient", ["X", "scale", "bias", "dY", "m", "s"],
                     ["dX", "ds", "db"])
    h.assert_op_error(grad, [x, c3, c3, x, np.ones((2, 2), np.float32),
                             np.ones((2, 3), np.float32)], "'m'")


def test_device():
    # Outside @given: check_device skips the whole test without a GPU.
    rng = np.random.RandomState(3)
    x = rng.randn(2, 3, 4, 5).astype(np.float32)
    c3 = rng.randn(3).astype(np.float32)
    for op, inputs in [
            (h.make_op("LayerNorm", ["X"], ["Y", "mean", "std"], axis=2), [x]),
            (h.make_op("InstanceNorm", ["X", "s", "b"], ["Y", "m", "r"]), [x, c3, c3])]:
        h.check_device(op, inputs)


if __name__ == "__main__":
    h.run_main(__file__)
