"""CUDA ops built on the shared functors (operators/elementwise_functors.h):
CPU vs CUDA through the op harness, and the Philox-driven fills and dropout
against statistics computed here with numpy. The functors' CPU instantiation
is tested without a GPU in elementwise_functors_test.cc; everything here
needs a GPU and skips, naming the reason, without one."""
import numpy as np
import pytest

import op_harness as h
from doppio import _C
from doppio.proto import doppio_pb2

pytestmark = pytest.mark.skipif(
    _C.num_cuda_devices() == 0,
    reason="no CUDA GPU: %s" % (_C.cuda_unavailable_reason() if _C.num_cuda_devices() == 0
                                else ""))


def cuda_option(seed=None):
    option = doppio_pb2.DeviceOption()
    option.device_type = doppio_pb2.CUDA
    if seed is not None:
        option.random_seed = seed
    return option


def run_mixed(op, gpu_inputs, cpu_inputs=()):
    """Runs a CUDA `op` with `gpu_inputs` (name, array) fed to the GPU and
    `cpu_inputs` kept on the host (Iter's counter); returns the outputs."""
    option_bytes = op.device_option.SerializeToString()
    with h._FreshWorkspace():
        for name, array in gpu_inputs:
            _C.feed_blob(name, np.require(array, requirements="C"), option_bytes)
        for name, array in cpu_inputs:
            _C.feed_blob(name, np.require(array, requirements="C"), None)
        _C.run_operator_once(op.SerializeToString())
        return [_C.fetch_blob(name) for name in op.output]


RNG = np.random.RandomState(5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["Relu", "Sigmoid", "Tanh", "Exp", "Neg"])
def test_unary_cpu_vs_cuda(name, dtype):
    x = RNG.uniform(-3, 3, size=(4, 5, 6)).astype(dtype)
    h.check_device(h.make_op(name, ["X"], ["Y"]), [x])


@pytest.mark.parametrize("name", ["Log", "Sqrt"])
def test_positive_domain_cpu_vs_cuda(name):
    x = RNG.uniform(0.01, 5, size=(7, 9)).astype(np.float32)
    h.check_device(h.make_op(name, ["X"], ["Y"]), [x])


@pytest.mark.parametrize("name", ["ReluGradient", "SigmoidGradient", "TanhGradient"])
def test_activation_gradient_cpu_vs_cuda(name):
    y = RNG.uniform(-0.9, 0.9, size=(5, 8)).astype(np.float32)
    dy = RNG.standard_normal((5, 8)).astype(np.float32)
    h.check_device(h.make_op(name, ["Y", "dY"], ["dX"]), [y, dy])


@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes,args", [
    (((2, 3, 4), (2, 3, 4)), {}),
    (((2, 3, 4), (3, 1)), {}),
    (((1, 3, 1, 5), (4, 1, 2, 1)), {}),
    (((2, 3, 4, 5), (3, 4)), {"broadcast": 1, "axis": 1}),
    (((2, 3), ()), {}),
])
def test_binary_broadcast_cpu_vs_cuda(name, shapes, args):
    a = RNG.uniform(0.5, 2, size=shapes[0]).astype(np.float32)
    b = RNG.uniform(0.5, 2, size=shapes[1]).astype(np.float32)
    h.check_device(h.make_op(name, ["A", "B"], ["C"], **args), [a, b])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "Div"])
def test_integer_binary_cpu_vs_cuda(name, dtype):
    """Integer arithmetic on the GPU (a While loop's counter); integer Div
    goes through the CPU kernel, which checks its divisors."""
    a = RNG.randint(-50, 50, size=(3, 4)).astype(dtype)
    b = RNG.choice([-3, -1, 1, 2, 7], size=(4,)).astype(dtype)
    h.check_device(h.make_op(name, ["A", "B"], ["C"]), [a, b])
    if name == "Div":
        op = h.make_op("Div", ["A", "B"], ["C"], device_option=cuda_option())
        with pytest.raises(RuntimeError, match="integer division by zero"):
            run_mixed(op, [("A", a), ("B", np.zeros(4, dtype))])


def test_fills_follow_their_distributions():
    shape = [256, 512]
    uniform, = run_mixed(h.make_op("UniformFill", [], ["Y"], device_option=cuda_option(3),
                                   shape=shape, min=-1.0, max=2.0), [])
    assert uniform.shape == (256, 512) and uniform.dtype == np.float32
    assert uniform.min() >= -1.0 and uniform.max() < 2.0
    assert abs(uniform.mean() - 0.5) < 0.01
    gauss, = run_mixed(h.make_op("GaussianFill", [], ["Y"], device_option=cuda_option(3),
                                 shape=shape, mean=1.0, std=2.0), [])
    assert abs(gauss.mean() - 1.0) < 0.02 and abs(gauss.std() - 2.0) < 0.02
    xavier, = run_mixed(h.make_op("XavierFill", [], ["Y"], device_option=cuda_option(3),
                                  shape=shape), [])
    assert np.abs(xavier).max() <= np.sqrt(3.0 / 512)
    msra, = run_mixed(h.make_op("MSRAFill", [], ["Y"], device_option=cuda_option(3),
                                shape=shape), [])
    assert abs(msra.std() - np.sqrt(2.0 / 256)) < 0.002
    constant, = run_mixed(h.make_op("ConstantFill", [], ["Y"], device_option=cuda_option(),
                                    shape=[3, 4], value=2.5), [])
    np.testing.assert_array_equal(constant, np.full((3, 4), 2.5, np.float32))


@pytest.mark.parametrize("args", [
    {"value": 3},                                          # an int value: int64, as on the CPU
    {"value": 7, "dtype": doppio_pb2.TensorProto.INT32},
    {"value": 0.25, "dtype": doppio_pb2.TensorProto.DOUBLE},
    {"value": 1.5},
    {"value": 1, "dtype": doppio_pb2.TensorProto.BOOL},    # an If condition (ops.Const)
    {"value": 200, "dtype": doppio_pb2.TensorProto.UINT8},
    {"value": 60000, "dtype": doppio_pb2.TensorProto.UINT16},
])
def test_constant_fill_takes_the_cpu_dtype_rule(args):
    op = h.make_op("ConstantFill", [], ["Y"], shape=[2, 3], **args)
    cpu, = h.run_op(op, [])
    op.device_option.CopyFrom(cuda_option())
    gpu, = run_mixed(op, [])
    assert gpu.dtype == cpu.dtype
    np.testing.assert_array_equal(gpu, cpu)


def test_cuda_fill_refuses_what_it_cannot_write():
    op = h.make_op("ConstantFill", [], ["Y"], device_option=cuda_option(), shape=[2],
                   value="x", dtype=doppio_pb2.TensorProto.STRING)
    with pytest.raises(RuntimeError, match="the CUDA ConstantFill writes float32, float64"):
        run_mixed(op, [])
    op = h.make_op("UniformFill", [], ["Y"], device_option=cuda_option(), shape=[2],
                   min=1.0, max=1.0)
    with pytest.raises(RuntimeError, match="must be bigger than min"):
        run_mixed(op, [])


def test_seeded_fill_repeats_and_seeds_differ():
    def fill(seed):
        return run_mixed(h.make_op("UniformFill", [], ["Y"], device_option=cuda_option(seed),
                                   shape=[1000]), [])[0]
    np.testing.assert_array_equal(fill(11), fill(11))
    assert not np.array_equal(fill(11), fill(12))


def test_dropout_mask_rate_and_scale():
    x = RNG.standard_normal((400, 500)).astype(np.float32)
    op = h.make_op("Dropout", ["X"], ["Y", "mask"], device_option=cuda_option(9), ratio=0.3)
    y, mask = run_mixed(op, [("X", x)])
    assert mask.dtype == np.bool_
    assert abs(mask.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y, np.where(mask, x / 0.7, 0), rtol=1e-6, atol=1e-7)
    dy = RNG.standard_normal(x.shape).astype(np.float32)
    grad = h.make_op("DropoutGrad", ["dY", "mask"], ["dX"], device_option=cuda_option(),
                     ratio=0.3)
    option_bytes = grad.device_option.SerializeToString()
    with h._FreshWorkspace():
        _C.feed_blob("dY", dy, option_bytes)
        _C.feed_blob("mask", mask, option_bytes)
        _C.run_operator_once(grad.SerializeToString())
        dx = _C.fetch_blob("dX")
    np.testing.assert_allclose(dx, np.where(mask, dy / 0.7, 0), rtol=1e-6, atol=1e-7)


def test_dropout_test_mode_is_identity():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    h.check_device(h.make_op("Dropout", ["X"], ["Y"], ratio=0.5, is_test=1), [x])


@pytest.mark.parametrize("nesterov", [0, 1])
def test_momentum_sgd_update_cpu_vs_cuda(nesterov):
    grad, moment, param = (RNG.standard_normal(50).astype(np.float32) for _ in range(3))
    lr = np.array([-0.1], np.float32)
    op = h.make_op("MomentumSGDUpdate", ["g", "m", "lr", "p"], ["g", "m", "p"],
                   momentum=0.9, nesterov=nesterov)
    h.check_device(op, [grad, moment, lr, param])


def test_adam_and_learning_rate_match_numpy():
    param, m1, grad = (RNG.standard_normal(64).astype(np.float32) for _ in range(3))
    m2 = RNG.uniform(0, 1, 64).astype(np.float32)
    lr = np.array([-0.01], np.float32)
    it = np.array([4], np.int64)
    op = h.make_op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"],
                   device_option=cuda_option())
    p_new, m1_new, m2_new = run_mixed(
        op, [("p", param), ("m1", m1), ("m2", m2), ("g", grad), ("lr", lr)], [("it", it)])
    g = grad.astype(np.float64)
    m = 0.9 * m1 + 0.1 * g
    v = 0.999 * m2 + 0.001 * g * g
    t = 5.0
    step = np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-5)
    # The kernel computes in float32: where 0.9*m1 and 0.1*g nearly cancel,
    # the error is a few float32 ulps of the terms (~1), not of the result.
    np.testing.assert_allclose(m1_new, m, rtol=1e-6, atol=4e-7)
    np.testing.assert_allclose(m2_new, v, rtol=1e-6, atol=4e-7)
    np.testing.assert_allclose(p_new, param - 0.01 * step, rtol=1e-5, atol=1e-6)

    lr_op = h.make_op("LearningRate", ["it"], ["lr"], device_option=cuda_option(),
                      base_lr=-0.1, policy="step", stepsize=2, gamma=0.5)
    rate, = run_mixed(lr_op, [], [("it", it)])
    np.testing.assert_allclose(rate, -0.1 * 0.5 ** 2, rtol=1e-6)


def test_label_cross_entropy_cpu_vs_cuda():
    x = RNG.uniform(0.0, 1.0, size=(9, 5)).astype(np.float32)
    x[0, 2] = 0.0  # clamped at 1e-20
    labels = RNG.randint(0, 5, size=9).astype(np.int32)
    labels[0] = 2
    dy = RNG.standard_normal(9).astype(np.float32)
    h.check_device(h.make_op("LabelCrossEntropy", ["X", "label"], ["Y"]), [x, labels])
    x[0, 2] = 0.5
    h.check_device(h.make_op("LabelCrossEntropyGradient", ["X", "label", "dY"], ["dX"]),
                          [x, labels, dy])


def test_accuracy_cpu_vs_cuda():
    scores = RNG.standard_normal((37, 6)).astype(np.float32)
    labels = RNG.randint(0, 6, size=37).astype(np.int32)
    for top_k in (1, 3):
        h.check_device(h.make_op("Accuracy", ["X", "label"], ["acc"], top_k=top_k),
                              [scores, labels])


if __name__ == "__main__":
    # -rs: the log names why the tests were skipped (no GPU, and the reason).
    import sys
    sys.exit(pytest.main([__file__, "-q", "-rs", "-p", "no:cacheprovider"]))
