"""CPU vs CUDA for the reference CNN's and MLP's heavy layers (cuBLAS FC and
MatMul, cuDNN Conv, pooling, SpatialBN, Softmax) and their gradients, through
the op harness. The CPU kernels are themselves checked against numpy in
their own tests; here the CUDA kernels must agree with them. Skipped, with
the reason, on machines without a GPU."""
import numpy as np
import pytest

import op_harness as h
from doppio import _C

pytestmark = pytest.mark.skipif(
    _C.num_cuda_devices() == 0,
    reason="needs a CUDA GPU: " + (_C.cuda_unavailable_reason() or "none"))

TOL = dict(atol=1e-4, rtol=1e-4)


def _rand(rng, *shape):
    return rng.randn(*shape).astype(np.float32)


def _cpu(op, inputs):
    return h.run_op(op, inputs)


@pytest.mark.parametrize("engine", [None, "TENSORCORE"])
@pytest.mark.parametrize("op_type", ["FC", "FCTransposed"])
def test_fc_and_gradient(op_type, engine):
    rng = np.random.RandomState(0)
    x = _rand(rng, 64, 3136)
    w = _rand(rng, 128, 3136) if op_type == "FC" else _rand(rng, 3136, 128)
    b = _rand(rng, 128)
    dy = _rand(rng, 64, 128)
    # TF32 keeps ~10 mantissa bits; the default engine stays float32-exact.
    tol = dict(atol=5e-2, rtol=5e-2) if engine else dict(atol=1e-3, rtol=1e-4)
    h.check_device(h.make_op(op_type, ["X", "W", "b"], ["Y"], engine=engine), [x, w, b], **tol)
    grad = h.make_op(op_type + "Gradient", ["X", "W", "dY"], ["dW", "db", "dX"], engine=engine)
    h.check_device(grad, [x, w, dy], **tol)
    # Without dX, and with an empty batch.
    h.check_device(h.make_op(op_type + "Gradient", ["X", "W", "dY"], ["dW", "db"]),
                   [x[:0], w, dy[:0]])


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_matmul_and_gradient_form(trans_a, trans_b):
    rng = np.random.RandomState(1)
    a = _rand(rng, 5, 7) if not trans_a else _rand(rng, 7, 5)
    b = _rand(rng, 7, 3) if not trans_b else _rand(rng, 3, 7)
    op = h.make_op("MatMul", ["A", "B"], ["Y"], trans_a=trans_a, trans_b=trans_b)
    h.check_device(op, [a, b], **TOL)
    # The gradient maker's form: a third input gives Y its shape.
    like = np.zeros((5, 1, 3), np.float32)
    op = h.make_op("MatMul", ["A", "B", "L"], ["Y"], trans_a=trans_a, trans_b=trans_b)
    h.check_device(op, [a, b, like], **TOL)


CONV_CASES = [
    # (x shape, w shape, args): the reference CNN's layers, then groups,
    # stride / dilation, NHWC, 1-D and 3-D.
    ((8, 1, 28, 28), (32, 1, 3, 3), dict(pad=1)),
    ((8, 32, 14, 14), (64, 32, 3, 3), dict(pad=1)),
    ((4, 8, 9, 9), (12, 2, 3, 3), dict(pad=1, group=4)),
    ((2, 3, 13, 11), (4, 3, 3, 2), dict(pads=[1, 0, 1, 0], strides=[2, 1], dilation=2)),
    ((2, 9, 9, 6), (4, 3, 3, 6), dict(pad=1, order="NHWC")),
    ((2, 3, 17), (4, 3, 5), dict(pad=2, stride=2)),
    ((2, 2, 5, 6, 7), (3, 2, 3, 3, 3), dict(pad=1)),
]


@pytest.mark.parametrize("deterministic", [0, 1])
@pytest.mark.parametrize("x_shape,w_shape,args", CONV_CASES)
def test_conv_and_gradient(x_shape, w_shape, args, deterministic):
    rng = np.random.RandomState(2)
    x, w = _rand(rng, *x_shape), _rand(rng, *w_shape)
    b = _rand(rng, w_shape[0])
    y = _cpu(h.make_op("Conv", ["X", "W", "b"], ["Y"], **args), [x, w, b])[0]
    dy = _rand(rng, *y.shape)
    for engine in (None, "CUDNN"):
        op = h.make_op("Conv", ["X", "W", "b"], ["Y"], engine=engine,
                       deterministic=deterministic, **args)
        h.check_device(op, [x, w, b], atol=1e-3, rtol=1e-3)
        grad = h.make_op("ConvGradient", ["X", "W", "dY"], ["dW", "db", "dX"], engine=engine,
                         deterministic=deterministic, **args)
        h.check_device(grad, [x, w, dy], atol=1e-3, rtol=1e-3)
    nobias = h.make_op("ConvGradient", ["X", "W", "dY"], ["dW", "dX"], no_bias=1, **args)
    h.check_device(nobias, [x, w, dy], atol=1e-3, rtol=1e-3)


def test_conv_exhaustive_search_and_small_workspace():
    rng = np.random.RandomState(3)
    x, w, b = _rand(rng, 8, 32, 14, 14), _rand(rng, 64, 32, 3, 3), _rand(rng, 64)
    for args in (dict(exhaustive_search=1), dict(ws_nbytes_limit=0)):
        op = h.make_op("Conv", ["X", "W", "b"], ["Y"], pad=1, **args)
        h.check_device(op, [x, w, b], atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("args", [dict(kernel=2, stride=2), dict(kernel=3, stride=2, pad=1),
                                  dict(kernel=3, pad=1, count_include_pad=1),
                                  dict(kernels=[2, 3], order="NHWC"),
                                  dict(global_pooling=1)])
def test_pool_and_gradient(op_type, args):
    rng = np.random.RandomState(4)
    x = _rand(rng, 4, 6, 10, 9)
    op = h.make_op(op_type, ["X"], ["Y"], **args)
    h.check_device(op, [x], **TOL)
    y = _cpu(op, [x])[0]
    dy = _rand(rng, *y.shape)
    grad = h.make_op(op_type + "Gradient", ["X", "Y", "dY"], ["dX"], **args)
    h.check_device(grad, [x, y, dy], **TOL)


INPUTS = ["X", "scale", "bias", "mean", "var"]
TRAIN_OUTPUTS = ["Y", "mean", "var", "saved_mean", "saved_inv_std"]


@pytest.mark.parametrize("order,shape", [("NCHW", (8, 32, 14, 14)), ("NHWC", (4, 5, 5, 3)),
                                         ("NCHW", (6, 4))])
def test_spatial_bn_and_gradient(order, shape):
    rng = np.random.RandomState(5)
    x = _rand(rng, *shape) * 3 + 1
    channels = shape[-1] if order == "NHWC" else shape[1]
    params = [rng.uniform(0.5, 1.5, channels).astype(np.float32) for _ in range(4)]
    train = h.make_op("SpatialBN", INPUTS, TRAIN_OUTPUTS, order=order, momentum=0.8,
                      epsilon=1e-4)
    # Every output: Y, running mean / variance (momentum update, unbiased
    # variance), saved mean and inverse std.
    h.check_device(train, [x] + params, **TOL)
    h.check_device(h.make_op("SpatialBN", INPUTS, ["Y"], is_test=1, order=order), [x] + params,
                   **TOL)
    saved = _cpu(train, [x] + params)[3:]
    dy = _rand(rng, *shape)
    grad = h.make_op("SpatialBNGradient", ["X", "scale", "dY", "saved_mean", "saved_inv_std"],
                     ["dX", "dscale", "dbias"], order=order, epsilon=1e-4)
    h.check_device(grad, [x, params[0], dy] + saved, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis", [1, 2, -1])
def test_softmax_and_gradient(op_type, axis):
    rng = np.random.RandomState(6)
    x = _rand(rng, 4, 5, 6) * 4
    op = h.make_op(op_type, ["X"], ["Y"], axis=axis)
    h.check_device(op, [x], **TOL)
    y = _cpu(op, [x])[0]
    dy = _rand(rng, *y.shape)
    grad = h.make_op(op_type + "Gradient", ["Y", "dY"], ["dX"], axis=axis)
    h.check_device(grad, [y, dy], **TOL)


def test_host_inputs_are_an_error_not_a_fault():
    x = np.ones((2, 3), np.float32)
    op = h.make_op("Softmax", ["X"], ["Y"])
    op.device_option.device_type = 1  # CUDA, but X is fed on the host below
    with h._FreshWorkspace():
        _C.feed_blob("X", x)
        with pytest.raises(RuntimeError) as info:
            _C.run_operator_once(op.SerializeToString())
    assert "'X'" in str(info.value) and "CPU" in str(info.value)


if __name__ == "__main__":
    h.run_main(__file__)
