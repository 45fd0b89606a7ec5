"""SpatialBN and SpatialBNGradient through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

ORDERS = st.sampled_from(["NCHW", "NHWC"])
EPSILONS = st.sampled_from([1e-5, 1e-3, 0.1])


def _f32(value):
    # The op reads epsilon and momentum as float32; so must the reference.
    return float(np.float32(value))


def channel_axis(x, order):
    return 1 if order == "NCHW" else x.ndim - 1


def per_channel(v, x, order):
    """v of shape [C] reshaped to broadcast against x."""
    shape = [1] * x.ndim
    shape[channel_axis(x, order)] = -1
    return v.reshape(shape)


def reduce_axes(x, order):
    return tuple(a for a in range(x.ndim) if a != channel_axis(x, order))


def bn_test_mode(x, scale, bias, mean, var, epsilon, order):
    eps = _f32(epsilon)
    return ((x - per_channel(mean, x, order)) / np.sqrt(per_channel(var, x, order) + eps)
            * per_channel(scale, x, order) + per_channel(bias, x, order))


def bn_train_mode(x, scale, bias, running_mean, running_var, epsilon, momentum, order):
    """Outputs Y, running mean, running var (unbiased), saved mean, saved
    1/sqrt(var + eps), computed in float64."""
    x64 = x.astype(np.float64)
    axes = reduce_axes(x, order)
    mean = x64.mean(axis=axes)
    var = x64.var(axis=axes)
    count = x.size // mean.size
    eps, m = _f32(epsilon), _f32(momentum)
    y = bn_test_mode(x64, scale, bias, mean, var, epsilon, order)
    new_mean = m * running_mean + (1 - m) * mean
    new_var = m * running_var + (1 - m) * var * count / (count - 1)
    return [y, new_mean, new_var, mean, 1 / np.sqrt(var + eps)]


@st.composite
def bn_case(draw, dtype=None, min_values_per_channel=1):
    """(x, scale, bias, mean, var, order) with rank 2..5 and small dims."""
    order = draw(ORDERS)
    shape = draw(h.dims(2, 5, 1, 4))
    dtype = dtype or draw(h.float_dtypes)
    c_axis = 1 if order == "NCHW" else len(shape) - 1
    if np.prod(shape) // shape[c_axis] < min_values_per_channel:
        shape[0] = min_values_per_channel
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    C = shape[c_axis]
    x = (rng.randn(*shape) * 2 + 0.5).astype(dtype)
    scale = rng.uniform(0.5, 2, C).astype(dtype)
    bias = rng.randn(C).astype(dtype)
    mean = rng.randn(C).astype(dtype)
    var = rng.uniform(0.5, 2, C).astype(dtype)
    return x, scale, bias, mean, var, order


INPUTS = ["X", "scale", "bias", "mean", "var"]
TRAIN_OUTPUTS = ["Y", "mean", "var", "saved_mean", "saved_inv_std"]


@given(bn_case(), EPSILONS)
def test_test_mode_matches_numpy(case, epsilon):
    x, scale, bias, mean, var, order = case
    op = h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, epsilon=epsilon, order=order)
    h.check_output(op, [x, scale, bias, mean, var],
                   lambda x, s, b, m, v: bn_test_mode(x.astype(np.float64), s, b, m, v,
                                                      epsilon, order))
    assert h.check_inplace(op, [x, scale, bias, mean, var]) == 1


@given(bn_case(min_values_per_channel=2), EPSILONS, st.sampled_from([0.0, 0.5, 0.9, 1.0]))
def test_train_mode_matches_numpy(case, epsilon, momentum):
    x, scale, bias, mean, var, order = case
    op = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, epsilon=epsilon, momentum=momentum,
                   order=order)
    h.check_output(op, [x, scale, bias, mean, var],
                   lambda *a: bn_train_mode(*a[:5], epsilon, momentum, order))
    assert h.check_inplace(op, [x, scale, bias, mean, var]) == 1


@given(bn_case(dtype=np.float64, min_values_per_channel=2), EPSILONS)
def test_train_mode_gradient(case, epsilon):
    x, scale, bias, mean, var, order = case
    op = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, epsilon=epsilon, order=order)
    h.check_gradient(op, [x, scale, bias, mean, var], [0, 1, 2], outputs_with_grad=[0])


@given(bn_case(dtype=np.float64), EPSILONS)
def test_test_mode_gradient(case, epsilon):
    x, scale, bias, mean, var, order = case
    op = h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, epsilon=epsilon, order=order)
    h.check_gradient(op, [x, scale, bias, mean, var], [0, 1, 2])
    grad_ops, input_grads = h.gradient_ops(op)
    assert [g.type for g in grad_ops] == ["SpatialBNGradient"]
    # The running statistics are constants of the test-mode op.
    assert input_grads[3] is None and input_grads[4] is None


@given(st.sampled_from([np.float32, np.float64]), st.integers(0, 2**31 - 1))
def test_rows_longer_than_a_vector_block(dtype, seed):
    # NCHW rows of 5 * 7 = 35 values: whole 8-value blocks of the vectorized
    # row kernels plus a tail, which the small hypothesis shapes rarely reach.
    rng = np.random.RandomState(seed)
    x = (rng.randn(3, 2, 5, 7) * 2 + 0.5).astype(dtype)
    scale, var = (rng.uniform(0.5, 2, 2).astype(dtype) for _ in range(2))
    bias, mean = (rng.randn(2).astype(dtype) for _ in range(2))
    inputs = [x, scale, bias, mean, var]
    train = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, epsilon=1e-3, order="NCHW")
    h.check_output(train, inputs, lambda *a: bn_train_mode(*a[:5], 1e-3, 0.9, "NCHW"))
    assert h.check_inplace(train, inputs) == 1
    test = h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, epsilon=1e-3, order="NCHW")
    h.check_output(test, inputs, lambda x, s, b, m, v: bn_test_mode(
        x.astype(np.float64), s, b, m, v, 1e-3, "NCHW"))
    if dtype == np.float64:
        h.check_gradient(train, inputs, [0, 1, 2], outputs_with_grad=[0])


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_large_matches_numpy(order):
    # 4 * 8 * 33 * 33 values: enough for the kernels to split channels and
    # rows across threads (NHWC: 34 chunks of rows, the last one partial);
    # the gradient is checked against the closed form.
    rng = np.random.RandomState(7)
    x = (rng.randn(4, 8, 33, 33) * 2 + 0.5).astype(np.float32)
    if order == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    axes = reduce_axes(x, order)
    scale, var = (rng.uniform(0.5, 2, 8).astype(np.float32) for _ in range(2))
    bias, mean = (rng.randn(8).astype(np.float32) for _ in range(2))
    inputs = [x, scale, bias, mean, var]
    train = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, epsilon=1e-5, order=order)
    h.check_output(train, inputs, lambda *a: bn_train_mode(*a[:5], 1e-5, 0.9, order))
    assert h.check_inplace(train, inputs) == 1

    _, _, _, saved_mean, saved_inv_std = h.run_op(train, inputs)
    dy = rng.randn(*x.shape).astype(np.float32)
    grad = h.make_op("SpatialBNGradient", ["X", "scale", "dY", "saved_mean", "saved_inv_std"],
                     ["dX", "dscale", "dbias"], epsilon=1e-5, order=order)
    dx, dscale, dbias = h.run_op(grad, [x, scale, dy, saved_mean, saved_inv_std])
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    mu = x64.mean(axis=axes)
    inv_std = 1 / np.sqrt(x64.var(axis=axes) + _f32(1e-5))
    xhat = (x64 - per_channel(mu, x, order)) * per_channel(inv_std, x, order)
    want_dbias = dy64.sum(axis=axes)
    want_dscale = (dy64 * xhat).sum(axis=axes)
    count = x.size // 8
    want_dx = per_channel(scale * inv_std / count, x, order) * (
        count * dy64 - per_channel(want_dbias, x, order)
        - xhat * per_channel(want_dscale, x, order))
    np.testing.assert_allclose(dbias, want_dbias, rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(dscale, want_dscale, rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-4)


def test_gradient_ops_use_saved_statistics():
    op = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, epsilon=1e-3, order="NHWC")
    grad_ops, _ = h.gradient_ops(op)
    assert len(grad_ops) == 1
    assert list(grad_ops[0].input) == ["X", "scale", "Y_grad", "saved_mean", "saved_inv_std"]
    assert list(grad_ops[0].output) == ["X_grad", "scale_grad", "bias_grad"]
    assert {a.name for a in grad_ops[0].arg} >= {"epsilon", "order"}


@given(bn_case(min_values_per_channel=2), st.integers(2, 3), st.data())
def test_multi_batch_statistics(case, num_batches, data):
    """num_batches > 1: mean and variance come from per-channel sums."""
    x, scale, bias, mean, var, order = case
    rng = np.random.RandomState(data.draw(st.integers(0, 2**31 - 1)))
    axes = reduce_axes(x, order)
    batches = [x.astype(np.float64)] + [rng.randn(*x.shape) for _ in range(num_batches - 1)]
    sums = sum(b.sum(axis=axes) for b in batches).astype(x.dtype)
    sumsq = sum((b * b).sum(axis=axes) for b in batches).astype(x.dtype)
    op = h.make_op("SpatialBN", INPUTS + ["sums", "sumsq"], TRAIN_OUTPUTS, order=order,
                   num_batches=num_batches, momentum=0.5)

    def reference(x, scale, bias, running_mean, running_var, sums, sumsq):
        count = num_batches * (x.size // scale.size)
        mu = sums.astype(np.float64) / count
        v = sumsq.astype(np.float64) / count - mu * mu
        y = bn_test_mode(x.astype(np.float64), scale, bias, mu, v, 1e-5, order)
        return [y, 0.5 * running_mean + 0.5 * mu,
                0.5 * running_var + 0.5 * v * count / (count - 1), mu,
                1 / np.sqrt(v + _f32(1e-5))]

    tol = 1e-3 if x.dtype == np.float32 else 1e-7
    h.check_output(op, [x, scale, bias, mean, var, sums, sumsq], reference, atol=tol, rtol=tol)


@given(bn_case(dtype=np.float64, min_values_per_channel=2), st.integers(2, 3), st.data())
def test_multi_batch_gradient(case, num_batches, data):
    """SpatialBNGradient with aggregated dscale/dbias (the num_batches path)."""
    x, scale, _, _, _, order = case
    rng = np.random.RandomState(data.draw(st.integers(0, 2**31 - 1)))
    C = scale.size
    dy = rng.randn(*x.shape)
    mean = rng.randn(C)
    inv_std = rng.uniform(0.5, 2, C)
    dscale_sum = rng.randn(C)
    dbias_sum = rng.randn(C)
    op = h.make_op("SpatialBNGradient",
                   ["X", "scale", "dY", "mean", "inv_std", "dscale_sum", "dbias_sum"],
                   ["dX", "dscale_sum", "dbias_sum"], num_batches=num_batches, order=order)

    def reference(x, scale, dy, mean, inv_std, dscale_sum, dbias_sum):
        count = x.size // C
        dscale, dbias = dscale_sum / num_batches, dbias_sum / num_batches
        pc = lambda v: per_channel(v, x, order)
        dx = pc(scale * inv_std) * (dy - pc(dbias) / count
                                     - (x - pc(mean)) * pc(inv_std * dscale) / count)
        return [dx, dscale, dbias]

    h.check_output(op, [x, scale, dy, mean, inv_std, dscale_sum, dbias_sum], reference)


def test_empty_running_statistics_start_at_zero():
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3, 2).astype(np.float32)
    scale, bias = np.ones(3, np.float32), np.zeros(3, np.float32)
    empty = np.zeros((0,), np.float32)
    op = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, momentum=0.9)
    h.check_output(op, [x, scale, bias, empty, empty],
                   lambda x, s, b, m, v: bn_train_mode(x, s, b, np.zeros(3), np.zeros(3),
                                                       1e-5, 0.9, "NCHW")[:3],
                   outputs_to_check=[0, 1, 2])


def test_bad_inputs():
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    c3 = np.ones(3, np.float32)
    test_op = h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1)
    train_op = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS)
    # Rank 1: no channel dim.
    h.assert_op_error(test_op, [np.ones(3, np.float32), c3, c3, c3, c3], "'X'", "rank")
    # scale / bias / mean of the wrong channel count.
    h.assert_op_error(test_op, [x, np.ones(4, np.float32), c3, c3, c3], "scale", "'scale'")
    h.assert_op_error(test_op, [x, c3, np.ones(2, np.float32), c3, c3], "'bias'")
    h.assert_op_error(test_op, [x, c3, c3, c3, np.ones(5, np.float32)], "'var'")
    h.assert_op_error(train_op, [x, c3, c3, np.ones(2, np.float32), c3], "'mean'")
    # NHWC makes the channel count 4.
    h.assert_op_error(h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, order="NHWC"),
                      [x, c3, c3, c3, c3], "'scale'", "4 elements")
    h.assert_op_error(h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, order="CHWN"),
                      [x, c3, c3, c3, c3], "order", "CHWN")
    # Integer input; mixed dtypes.
    h.assert_op_error(test_op, [x.astype(np.int32), c3, c3, c3, c3], "'X'", "int32")
    h.assert_op_error(test_op, [x, c3.astype(np.float64), c3, c3, c3], "'scale'", "float64")
    # Output count must match the mode.
    h.assert_op_error(h.make_op("SpatialBN", INPUTS, ["Y"]), [x, c3, c3, c3, c3], "output")
    # Training with one value per channel has no variance.
    h.assert_op_error(train_op, [np.ones((1, 3), np.float32), c3, c3, c3, c3],
                      "more than one value")
    # The running statistics must be updated in place.
    h.assert_op_error(h.make_op("SpatialBN", INPUTS, ["Y", "m2", "var", "sm", "siv"]),
                      [x, c3, c3, c3, c3], "in place")
    h.assert_op_error(h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, momentum=1.5),
                      [x, c3, c3, c3, c3], "momentum")
    # A gradient whose shape differs from X.
    grad = h.make_op("SpatialBNGradient", ["X", "scale", "dY", "m", "s"], ["dX", "ds", "db"])
    h.assert_op_error(grad, [x, c3, np.ones((2, 3, 5), np.float32), c3, c3], "'dY'")


def test_device():
    # Outside @given: check_device skips the whole test without a GPU.
    rng = np.random.RandomState(3)
    x = rng.randn(4, 3, 5, 5).astype(np.float32)
    c = [rng.uniform(0.5, 1.5, 3).astype(np.float32) for _ in range(4)]
    h.check_device(h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS), [x] + c)
    h.check_device(h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1), [x] + c)


if __name__ == "__main__":
    h.run_main(__file__)
