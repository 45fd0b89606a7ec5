"""CPU vs CUDA for the ops a data-parallel model places on the GPU besides
its layers: SoftmaxWithLoss, AveragedLoss, Scale, Sum, WeightedSum, the
broadcasting binary gradients (AddGradient ... DivGradient, SumReduceLike)
and the update ops reading a learning rate that a CPU LearningRate op
wrote. The CPU ops are checked against numpy in their own tests and the
shared functors on the CPU in loss_math_functors_test.cc; here the CUDA
kernels must agree with the CPU ops (outputs and gradients), and the host
learning rate with numpy.

Without a GPU every test skips with the reason; with DOPPIO_REQUIRE_GPU=1
(tools/gpu_selftest.sh) it fails instead."""
import os

import numpy as np
import pytest

import op_harness as h
from doppio import _C
from doppio.proto import doppio_pb2


def _gpu_required():
    return os.environ.get("DOPPIO_REQUIRE_GPU", "").strip().lower() not in ("", "0", "false",
                                                                             "off")


@pytest.fixture(autouse=True)
def needs_gpu():
    if _C.num_cuda_devices() > 0:
        return
    reason = "no CUDA GPU: %s" % (_C.cuda_unavailable_reason() or "none")
    if _gpu_required():
        pytest.fail("DOPPIO_REQUIRE_GPU is set but there is " + reason)
    pytest.skip(reason)


def cuda_option():
    option = doppio_pb2.DeviceOption()
    option.device_type = doppio_pb2.CUDA
    return option


def on_gpu(op):
    gpu = doppio_pb2.OperatorDef()
    gpu.CopyFrom(op)
    gpu.device_option.CopyFrom(cuda_option())
    return gpu


def run_mixed(op, gpu_inputs, cpu_inputs=()):
    """Runs `op` with (name, array) pairs fed to its device and others kept
    on the host; returns its outputs."""
    option = op.device_option.SerializeToString() if op.device_option.device_type else None
    with h._FreshWorkspace():
        for name, array in gpu_inputs:
            _C.feed_blob(name, np.require(array, requirements="C"), option)
        for name, array in cpu_inputs:
            _C.feed_blob(name, np.require(array, requirements="C"), None)
        _C.run_operator_once(op.SerializeToString())
        return [_C.fetch_blob(name) for name in op.output]


def check_cpu_vs_cuda(op, inputs, **tol):
    h.check_device(op, inputs, **tol)


RNG = np.random.RandomState(11)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---- SoftmaxWithLoss ----

def _softmax_cases():
    """(name, args, inputs, weighted): logits, labels[, weights]."""
    cases = []
    for dtype in (np.float32, np.float64):
        x = RNG.standard_normal((8, 10)).astype(dtype)
        labels = RNG.randint(0, 10, size=8).astype(np.int32)
        cases.append(("rows_%s" % np.dtype(dtype).name, {}, [x, labels], False))
        cases.append(("scaled_%s" % np.dtype(dtype).name, {"scale": 0.25}, [x, labels], False))
    x = RNG.standard_normal((5, 7)).astype(np.float32)
    cases.append(("int64_labels_column", {}, [x, RNG.randint(0, 7, (5, 1)).astype(np.int64)],
                  False))
    weights = RNG.uniform(0, 2, size=5).astype(np.float32)
    cases.append(("weighted", {}, [x, RNG.randint(0, 7, 5).astype(np.int32), weights], True))
    probs = softmax(RNG.standard_normal((5, 7)), 1).astype(np.float32)
    cases.append(("label_prob", {"label_prob": 1}, [x, probs], False))
    cases.append(("label_prob_weighted", {"label_prob": 1}, [x, probs, weights], True))
    x3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    cases.append(("axis_2", {"axis": 2}, [x3, RNG.randint(0, 4, (2, 3)).astype(np.int32)],
                  False))
    x4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    pixel_labels = RNG.randint(-1, 3, (2, 4, 5)).astype(np.int32)
    cases.append(("spatial", {"spatial": 1}, [x4, pixel_labels], False))
    cases.append(("spatial_weighted", {"spatial": 1},
                  [x4, pixel_labels, RNG.uniform(0, 1, (2, 4, 5)).astype(np.float32)], True))
    return cases


@pytest.mark.parametrize("name,args,inputs,weighted", _softmax_cases(),
                         ids=[c[0] for c in _softmax_cases()])
def test_softmax_with_loss_and_gradient(name, args, inputs, weighted):
    names = ["X", "labels"] + (["weights"] if weighted else [])
    forward = h.make_op("SoftmaxWithLoss", names, ["P", "loss"], **args)
    check_cpu_vs_cuda(forward, inputs)
    p, loss = h.run_op(forward, inputs)
    d_loss = np.array(1.7, dtype=inputs[0].dtype)
    grad = h.make_op("SoftmaxWithLossGradient", names + ["P", "d_loss"], ["dX"], **args)
    check_cpu_vs_cuda(grad, inputs + [p, d_loss])
    # The gradient maker's op is the one checked here.
    ops, _ = h.gradient_ops(forward)
    assert [op.type for op in ops] == ["SoftmaxWithLossGradient"]
    assert list(ops[0].input) == names + ["P", "loss_grad"]


def test_softmax_with_loss_bad_label_is_nan_on_gpu_and_an_error_on_cpu():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    labels = np.array([0, 1, 3, 2], np.int32)
    op = h.make_op("SoftmaxWithLoss", ["X", "labels"], ["P", "loss"])
    h.assert_op_error(op, [x, labels], "labels", "outside [0, 3)")
    p, loss = h.run_op(on_gpu(op), [x, labels])
    assert np.isnan(loss)
    np.testing.assert_allclose(p, softmax(x, 1), rtol=1e-6)
    grad = h.make_op("SoftmaxWithLossGradient", ["X", "labels", "P", "d"], ["dX"])
    dx, = h.run_op(on_gpu(grad), [x, labels, p, np.array(1.0, np.float32)])
    assert np.isnan(dx).all()


def test_softmax_with_loss_host_labels_are_an_error_not_a_fault():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    labels = np.array([0, 1, 2, 2], np.int32)
    op = on_gpu(h.make_op("SoftmaxWithLoss", ["X", "labels"], ["P", "loss"]))
    with pytest.raises(RuntimeError, match="labels.*not a CUDA tensor"):
        run_mixed(op, [("X", x)], [("labels", labels)])


# ---- AveragedLoss, Scale, Sum, WeightedSum ----

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (3, 40, 5), (0,), ()])
def test_averaged_loss_and_gradient(dtype, shape):
    x = RNG.standard_normal(shape).astype(dtype)
    check_cpu_vs_cuda(h.make_op("AveragedLoss", ["X"], ["Y"]), [x])
    dy = np.array(0.6, dtype)
    check_cpu_vs_cuda(h.make_op("AveragedLossGradient", ["X", "dY"], ["dX"]), [x, dy])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_in_and_out_of_place(dtype):
    x = RNG.standard_normal((6, 9)).astype(dtype)
    check_cpu_vs_cuda(h.make_op("Scale", ["X"], ["Y"], scale=0.1), [x])
    check_cpu_vs_cuda(h.make_op("Scale", ["X"], ["X"], scale=-3.0), [x])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_sum(dtype, count):
    xs = [(RNG.standard_normal((5, 6)) * 10).astype(dtype) for _ in range(count)]
    names = ["x%d" % i for i in range(count)]
    check_cpu_vs_cuda(h.make_op("Sum", names, ["y"]), xs)
    check_cpu_vs_cuda(h.make_op("Sum", names, ["x0"]), xs)


def test_sum_of_a_blob_with_itself():
    x = RNG.standard_normal(10).astype(np.float32)
    y, = h.run_op(on_gpu(h.make_op("Sum", ["x", "x"], ["y"])), [x])
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("dtype,weight_dtype", [(np.float32, np.float32),
                                                (np.float64, np.float32),
                                                (np.float64, np.float64)])
def test_weighted_sum_with_gpu_weights(dtype, weight_dtype):
    xs = [RNG.standard_normal((4, 5)).astype(dtype) for _ in range(3)]
    ws = [np.array([w], weight_dtype) for w in (0.5, -2.0, 0.125)]
    inputs = [v for pair in zip(xs, ws) for v in pair]
    names = ["x0", "w0", "x1", "w1", "x2", "w2"]
    check_cpu_vs_cuda(h.make_op("WeightedSum", names, ["y"]), inputs)
    check_cpu_vs_cuda(h.make_op("WeightedSum", names, ["x0"]), inputs)


def test_weighted_sum_sgd_step_with_a_host_learning_rate():
    """build_sgd without momentum: param = 1 * param + lr * grad, ONE on the
    GPU and lr the CPU LearningRate op's output."""
    param = RNG.standard_normal(30).astype(np.float32)
    grad = RNG.standard_normal(30).astype(np.float32)
    one = np.array([1.0], np.float32)
    lr = np.array([-0.05], np.float32)
    op = on_gpu(h.make_op("WeightedSum", ["p", "one", "g", "lr"], ["p"]))
    new_param, = run_mixed(op, [("p", param), ("one", one), ("g", grad)], [("lr", lr)])
    np.testing.assert_allclose(new_param, param - 0.05 * grad, rtol=1e-6, atol=1e-7)


# ---- binary gradients with broadcasting ----

BROADCASTS = [
    (((2, 3, 4), (2, 3, 4)), {}),
    (((2, 3, 4), (3, 1)), {}),
    (((1, 3, 1, 5), (4, 1, 2, 1)), {}),
    (((64, 10), (10,)), {}),
    (((2, 3, 4, 5), (3, 4)), {"broadcast": 1, "axis": 1}),
    (((2, 3, 4, 5), (5,)), {"broadcast": 1}),
    (((2, 3), ()), {}),
    (((), (2, 3)), {}),
]


def _forward_output(name, a, b, args):
    c, = h.run_op(h.make_op(name, ["A", "B"], ["C"], **args), [a, b])
    return c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes,args", BROADCASTS)
def test_binary_gradient(name, shapes, args, dtype):
    a = RNG.uniform(0.5, 2, size=shapes[0]).astype(dtype)
    b = RNG.uniform(0.5, 2, size=shapes[1]).astype(dtype)
    c = _forward_output(name, a, b, args)
    dc = RNG.standard_normal(c.shape).astype(dtype)
    names, inputs = ["dC", "A", "B"], [dc, a, b]
    if name == "Div":
        names, inputs = names + ["C"], inputs + [c]
    check_cpu_vs_cuda(h.make_op(name + "Gradient", names, ["dA", "dB"], **args), inputs)


def test_gradient_ops_match_the_gradient_makers_and_run_in_place():
    a = RNG.uniform(0.5, 2, size=(3, 4)).astype(np.float32)
    b = RNG.uniform(0.5, 2, size=(4,)).astype(np.float32)
    for name in ("Add", "Sub", "Mul", "Div"):
        forward = h.make_op(name, ["A", "B"], ["C"])
        ops, _ = h.gradient_ops(forward)
        assert [op.type for op in ops] == [name + "Gradient"]
    dc = RNG.standard_normal((3, 4)).astype(np.float32)
    # dA written over dC (schema: AllowInplace {0, 0}).
    check_cpu_vs_cuda(h.make_op("AddGradient", ["dC", "A", "B"], ["dC", "dB"]), [dc, a, b])
    check_cpu_vs_cuda(h.make_op("MulGradient", ["dC", "A", "B"], ["dC", "dB"]), [dc, a, b])
    # Caffe2's older three-input DivGradient(B, C, dC).
    c = a / b
    check_cpu_vs_cuda(h.make_op("DivGradient", ["B", "C", "dC"], ["dA", "dB"]), [b, c, dc])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes,args", [
    (((2, 3, 4, 5), (3, 4)), {"axis": 1}),
    (((2, 3, 4, 5), (4, 5)), {}),
    (((6, 7), (1,)), {}),
    (((6, 7), (6, 7)), {}),
])
def test_sum_reduce_like(shapes, args, dtype):
    a = RNG.standard_normal(shapes[0]).astype(dtype)
    b = np.zeros(shapes[1], dtype)
    check_cpu_vs_cuda(h.make_op("SumReduceLike", ["A", "B"], ["C"], **args), [a, b])


def test_integer_gradients_are_refused_clearly_on_gpu():
    dc = np.ones((2, 3), np.int32)
    op = on_gpu(h.make_op("AddGradient", ["dC", "A", "B"], ["dA", "dB"]))
    with pytest.raises(RuntimeError,
                       match="'dC' holds int32; supported types are float32, float64") as error:
        h.run_op(op, [dc, dc, dc])
    assert "AddGradient" in str(error.value)


# ---- update ops with the learning rate on the host ----

@pytest.mark.parametrize("nesterov", [0, 1])
@pytest.mark.parametrize("op_type", ["MomentumSGDUpdate", "MomentumSGD"])
def test_momentum_sgd_with_a_host_learning_rate(op_type, nesterov):
    grad, moment, param = (RNG.standard_normal(40).astype(np.float32) for _ in range(3))
    lr = np.array([0.1], np.float32)
    updates = op_type == "MomentumSGDUpdate"
    inputs = ["g", "m", "lr"] + (["p"] if updates else [])
    outputs = ["g", "m"] + (["p"] if updates else [])
    op = on_gpu(h.make_op(op_type, inputs, outputs, momentum=0.9, nesterov=nesterov))
    gpu_inputs = [("g", grad), ("m", moment)] + ([("p", param)] if updates else [])
    got = run_mixed(op, gpu_inputs, [("lr", lr)])
    g, m = grad.astype(np.float64), moment.astype(np.float64)
    new_m = 0.9 * m + 0.1 * g
    step = (1.9 * new_m - 0.9 * m) if nesterov else new_m
    np.testing.assert_allclose(got[0], step, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], new_m, rtol=1e-6, atol=1e-7)
    if updates:
        np.testing.assert_allclose(got[2], param - step, rtol=1e-6, atol=1e-6)


def test_adam_with_a_host_learning_rate_equals_the_gpu_one():
    param, m1, grad = (RNG.standard_normal(64).astype(np.float32) for _ in range(3))
    m2 = RNG.uniform(0, 1, 64).astype(np.float32)
    lr = np.array([-0.01], np.float32)
    it = np.array([4], np.int64)
    op = on_gpu(h.make_op("Adam", ["p", "m1", "m2", "g", "lr", "it"], ["p", "m1", "m2"]))
    tensors = [("p", param), ("m1", m1), ("m2", m2), ("g", grad)]
    on_host = run_mixed(op, tensors, [("lr", lr), ("it", it)])
    on_device = run_mixed(op, tensors + [("lr", lr)], [("it", it)])
    for host, device in zip(on_host, on_device):
        np.testing.assert_array_equal(host, device)
    v = 0.999 * m2 + 0.001 * grad.astype(np.float64) ** 2
    m = 0.9 * m1 + 0.1 * grad.astype(np.float64)
    step = np.sqrt(1 - 0.999 ** 5) / (1 - 0.9 ** 5) * m / (np.sqrt(v) + 1e-5)
    np.testing.assert_allclose(on_host[0], param - 0.01 * step, rtol=1e-5, atol=1e-6)


def test_learning_rate_must_be_one_float():
    grad = RNG.standard_normal(4).astype(np.float32)
    op = on_gpu(h.make_op("MomentumSGD", ["g", "m", "lr"], ["g", "m"], momentum=0.9))
    with pytest.raises(RuntimeError, match="the learning rate 'lr' must hold one element"):
        run_mixed(op, [("g", grad), ("m", grad)], [("lr", np.ones(2, np.float32))])
    with pytest.raises(RuntimeError, match="the learning rate 'lr' holds float64"):
        run_mixed(op, [("g", grad), ("m", grad)], [("lr", np.ones(1, np.float64))])


if __name__ == "__main__":
    import sys
    sys.exit(pytest.main([__file__, "-q", "-rs", "-p", "no:cacheprovider"]))
