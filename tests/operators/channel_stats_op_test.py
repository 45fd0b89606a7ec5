"""ChannelStats and ChannelBackpropStats against numpy, and the property
they exist for: a batch split in halves, with the halves' statistics summed
and fed to SpatialBN / SpatialBNGradient (num_batches=2), normalizes and
backpropagates exactly as the whole batch does (checked against a numpy
batch norm written here)."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h

ORDERS = st.sampled_from(["NCHW", "NHWC"])
EPS = float(np.float32(1e-5))


def channel_axis(ndim, order):
    return 1 if order == "NCHW" else ndim - 1


def reduce_axes(x, order):
    c = channel_axis(x.ndim, order)
    return tuple(a for a in range(x.ndim) if a != c)


def per_channel(v, x, order):
    shape = [1] * x.ndim
    shape[channel_axis(x.ndim, order)] = -1
    return np.asarray(v).reshape(shape)


@st.composite
def activation(draw, min_batch=1):
    order = draw(ORDERS)
    shape = draw(h.dims(2, 5, 1, 4))
    shape[0] = max(shape[0], min_batch)
    dtype = draw(h.float_dtypes)
    rng = np.random.RandomState(draw(st.integers(0, 2**31 - 1)))
    x = (rng.randn(*shape) * 1.5 + 0.3).astype(dtype)
    return x, order, rng


@given(activation())
def test_channel_stats_matches_numpy(case):
    x, order, _ = case
    op = h.make_op("ChannelStats", ["X"], ["sum", "sumsq"], order=order)
    axes = reduce_axes(x, order)
    x64 = x.astype(np.float64)
    h.check_output(op, [x], lambda x: [x64.sum(axis=axes), (x64 * x64).sum(axis=axes)],
                   output_dtypes=[x.dtype, x.dtype])


def test_channel_stats_default_order_is_nchw():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    op = h.make_op("ChannelStats", ["X"], ["sum", "sumsq"])
    # Channel 0 holds 0..3 and 12..15.
    expected_sum = [sum(range(0, 4)) + sum(range(12, 16)), sum(range(4, 8)) + sum(range(16, 20)),
                    sum(range(8, 12)) + sum(range(20, 24))]
    h.check_output(op, [x], lambda x: [np.array(expected_sum, np.float32),
                                       (x.astype(np.float64) ** 2).sum(axis=(0, 2))])


@given(activation())
def test_channel_backprop_stats_matches_numpy(case):
    x, order, rng = case
    C = x.shape[channel_axis(x.ndim, order)]
    mean = rng.randn(C).astype(x.dtype)
    inv_std = rng.uniform(0.5, 2, C).astype(x.dtype)
    dy = rng.randn(*x.shape).astype(x.dtype)
    op = h.make_op("ChannelBackpropStats", ["X", "mean", "inv_std", "dY"],
                   ["scale_grad", "bias_grad"], order=order)
    axes = reduce_axes(x, order)

    def reference(x, mean, inv_std, dy):
        x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
        centred = (x64 - per_channel(mean, x, order)) * per_channel(inv_std, x, order)
        return [(dy64 * centred).sum(axis=axes), dy64.sum(axis=axes)]

    h.check_output(op, [x, mean, inv_std, dy], reference, output_dtypes=[x.dtype, x.dtype])


def numpy_batch_norm(x, scale, bias, dy, order):
    """Training-mode batch norm on the whole batch: Y, and dX, dscale, dbias
    for the output gradient dy."""
    axes = reduce_axes(x, order)
    m = x.size // scale.size
    pc = lambda v: per_channel(v, x, order)
    mean = x.mean(axis=axes)
    inv_std = 1 / np.sqrt(x.var(axis=axes) + EPS)
    xhat = (x - pc(mean)) * pc(inv_std)
    y = xhat * pc(scale) + pc(bias)
    dbias = dy.sum(axis=axes)
    dscale = (dy * xhat).sum(axis=axes)
    dx = pc(scale * inv_std) * (dy - pc(dbias) / m - xhat * pc(dscale) / m)
    return y, dx, dscale, dbias


@given(activation(min_batch=2), st.data())
def test_split_batch_with_summed_stats_equals_whole_batch(case, data):
    x, order, rng = case
    x = x.astype(np.float64)
    half = x.shape[0] // 2
    parts = [x[:half], x[half:2 * half]]
    x = np.concatenate(parts)
    C = x.shape[channel_axis(x.ndim, order)]
    scale = rng.uniform(0.5, 2, C)
    bias = rng.randn(C)
    dy = rng.randn(*x.shape)
    dy_parts = [dy[:half], dy[half:]]
    y_ref, dx_ref, dscale_ref, dbias_ref = numpy_batch_norm(x, scale, bias, dy, order)

    stats = [h.run_op(h.make_op("ChannelStats", ["X"], ["s", "ss"], order=order), [p])
             for p in parts]
    sums = stats[0][0] + stats[1][0]
    sumsq = stats[0][1] + stats[1][1]
    bn = h.make_op("SpatialBN", ["X", "scale", "bias", "rm", "rv", "sums", "sumsq"],
                   ["Y", "rm", "rv", "saved_mean", "saved_inv_std"], order=order,
                   num_batches=2)
    forward = [h.run_op(bn, [p, scale, bias, np.zeros(C), np.ones(C), sums, sumsq])
               for p in parts]
    np.testing.assert_allclose(np.concatenate([f[0] for f in forward]), y_ref,
                               rtol=1e-7, atol=1e-8)

    backprop = [h.run_op(h.make_op("ChannelBackpropStats", ["X", "m", "s", "dY"],
                                   ["ds", "db"], order=order),
                         [p, f[3], f[4], d]) for p, f, d in zip(parts, forward, dy_parts)]
    dscale_sum = backprop[0][0] + backprop[1][0]
    dbias_sum = backprop[0][1] + backprop[1][1]
    grad = h.make_op("SpatialBNGradient",
                     ["X", "scale", "dY", "m", "s", "dscale_sum", "dbias_sum"],
                     ["dX", "dscale", "dbias"], order=order, num_batches=2)
    backward = [h.run_op(grad, [p, scale, d, f[3], f[4], dscale_sum, dbias_sum])
                for p, d, f in zip(parts, dy_parts, forward)]
    np.testing.assert_allclose(np.concatenate([b[0] for b in backward]), dx_ref,
                               rtol=1e-6, atol=1e-8)
    # Each half reports its share; summed across halves (the gradient
    # Allreduce) they are the whole batch's scale and bias gradients.
    np.testing.assert_allclose(backward[0][1] + backward[1][1], dscale_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(backward[0][2] + backward[1][2], dbias_ref, rtol=1e-7, atol=1e-9)


def test_bad_inputs():
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    c3 = np.ones(3, np.float32)
    stats = h.make_op("ChannelStats", ["X"], ["sum", "sumsq"])
    h.assert_op_error(stats, [np.ones(3, np.float32)], "'X'", "rank")
    h.assert_op_error(stats, [x.astype(np.int32)], "'X'")
    h.assert_op_error(h.make_op("ChannelStats", ["X"], ["s", "ss"], order="NCWH"), [x],
                      "NCWH")
    backprop = h.make_op("ChannelBackpropStats", ["X", "mean", "inv_std", "dY"], ["ds", "db"])
    h.assert_op_error(backprop, [x, np.ones(4, np.float32), c3, x], "'mean'")
    h.assert_op_error(backprop, [x, c3, c3.astype(np.float64), x], "'inv_std'")
    h.assert_op_error(backprop, [x, c3, c3, x[:1]], "'dY'")


def test_schemas_and_no_gradient():
    from doppio import _C
    for op_type, num_in, num_out in [("ChannelStats", 1, 2), ("ChannelBackpropStats", 4, 2)]:
        info = _C.schema(op_type)
        assert (info["min_input"], info["max_input"]) == (num_in, num_in)
        assert (info["min_output"], info["max_output"]) == (num_out, num_out)
    import pytest
    with pytest.raises(RuntimeError, match="ChannelStats"):
        _C.get_gradient_defs(h.make_op("ChannelStats", ["X"], ["s", "ss"]).SerializeToString(),
                             ["s_grad", "ss_grad"])


if __name__ == "__main__":
    h.run_main(__file__)
