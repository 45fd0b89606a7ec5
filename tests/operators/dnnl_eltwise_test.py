"""The oneDNN path of the pointwise ops (operators/dnnl_eltwise): float32
tensors of at least 4,096 elements run on oneDNN's kernels, smaller ones and
float64 on our loops. Each op is checked against numpy on both sides of that
threshold, in place, and with values out where exp overflows, so a kernel
with another formula or other bounds fails here."""
import numpy as np
import pytest

import op_harness as h

THRESHOLD = 4096


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def erf(x):
    import math
    return np.vectorize(math.erf)(x.astype(np.float64))


# op -> (args, numpy reference)
CASES = {
    "Relu": ({}, lambda x: np.maximum(x, 0)),
    "LeakyRelu": ({"alpha": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    "Sigmoid": ({}, sigmoid),
    "Tanh": ({}, lambda x: np.tanh(x.astype(np.float64))),
    "Elu": ({"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x.astype(np.float64)))),
    "Exp": ({}, lambda x: np.exp(x.astype(np.float64))),
    "Clip": ({"min": 0.0, "max": 6.0}, lambda x: np.clip(x, 0, 6)),
    "Swish": ({}, lambda x: x * sigmoid(x)),
    "Erf": ({}, erf),
}


def inputs(count, dtype, seed):
    rng = np.random.RandomState(seed)
    x = (rng.randn(count) * 4).astype(dtype)
    # Where exp over- and underflows, and exact zeros.
    x[:6] = [0.0, -0.0, 80.0, -80.0, 200.0, -200.0]
    return x


@pytest.mark.parametrize("op_type", sorted(CASES))
@pytest.mark.parametrize("count", [THRESHOLD - 1, THRESHOLD, 3 * THRESHOLD + 5, 300007])
def test_matches_numpy(op_type, count):
    args, reference = CASES[op_type]
    if op_type == "Exp":
        reference_f = lambda x: reference(np.clip(x, -80, 80))  # noqa: E731
        x = np.clip(inputs(count, np.float32, count), -80, 80)
    else:
        reference_f, x = reference, inputs(count, np.float32, count)
    op = h.make_op(op_type, ["X"], ["Y"], **args)
    h.check_output(op, [x], lambda v: reference_f(v).astype(np.float32), rtol=2e-6, atol=1e-6)
    h.check_inplace(op, [x], rtol=0, atol=0)


@pytest.mark.parametrize("op_type", sorted(CASES))
def test_shapes_and_float64(op_type):
    args, reference = CASES[op_type]
    x = inputs(2 * 3 * 40 * 41, np.float64, 1).reshape(2, 3, 40, 41)
    x = np.clip(x, -80, 80)
    out = h.run_op(h.make_op(op_type, ["X"], ["Y"], **args), [x])[0]
    assert out.shape == x.shape and out.dtype == np.float64
    # alpha is a float32 argument: 0.2 is 0.2 + 3e-9.
    np.testing.assert_allclose(out, reference(x), rtol=1e-7, atol=1e-12)
    x32 = x.astype(np.float32)
    out32 = h.run_op(h.make_op(op_type, ["X"], ["Y"], **args), [x32])[0]
    assert out32.shape == x.shape and out32.dtype == np.float32
    np.testing.assert_allclose(out32, reference(x32), rtol=2e-6, atol=1e-6)


def test_repeatable():
    """Runs give the same bits (the primitives are cached per size)."""
    x = inputs(50000, np.float32, 3)
    op = h.make_op("Sigmoid", ["X"], ["Y"])
    first = h.run_op(op, [x])[0]
    for _ in range(3):
        np.testing.assert_array_equal(h.run_op(op, [x])[0], first)


if __name__ == "__main__":
    h.run_main(__file__)
