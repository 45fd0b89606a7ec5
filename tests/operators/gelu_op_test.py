"""Gelu and GeluGradient (exact and fast_gelu) through the op harness:
numpy references, finite differences, in place, and the oneDNN path of
large float32 tensors."""
import math

import numpy as np
import pytest

import op_harness as h


def gelu_exact(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


REFERENCES = {0: gelu_exact, 1: gelu_tanh}


@pytest.mark.parametrize("fast", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [7, 5000, 70001])
def test_gelu_matches_numpy(fast, dtype, count):
    rng = np.random.RandomState(count + fast)
    x = (rng.randn(count) * 3).astype(dtype)
    x[:3] = [0.0, -12.0, 12.0]
    op = h.make_op("Gelu", ["X"], ["Y"], fast_gelu=fast)
    tolerance = 2e-6 if dtype == np.float32 else 1e-12
    h.check_output(op, [x], lambda v: REFERENCES[fast](v).astype(dtype), rtol=tolerance,
                   atol=tolerance)
    h.check_inplace(op, [x], rtol=0, atol=0)


@pytest.mark.parametrize("fast", [0, 1])
def test_gelu_gradient(fast):
    rng = np.random.RandomState(fast)
    x = (rng.randn(3, 4, 5) * 2).astype(np.float64)
    op = h.make_op("Gelu", ["X"], ["Y"], fast_gelu=fast)
    h.check_gradient(op, [x], [0])


def test_gelu_gradient_against_numpy():
    rng = np.random.RandomState(3)
    x = rng.randn(200).astype(np.float64) * 3
    dy = rng.randn(200)
    grad_op = h.gradient_ops(h.make_op("Gelu", ["X"], ["Y"]))[0][0]
    assert grad_op.type == "GeluGradient"
    dx = h.run_op(grad_op, [dy, x] if grad_op.input[0].endswith("_grad") else [x, dy])[0]
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(dx, dy * (cdf + x * pdf), rtol=1e-12, atol=1e-12)


def test_gelu_in_place_has_no_gradient():
    with pytest.raises(RuntimeError, match="reads the input"):
        h.gradient_ops(h.make_op("Gelu", ["X"], ["X"]))


def test_gelu_bad_input():
    h.assert_op_error(h.make_op("Gelu", ["X"], ["Y"]), [np.arange(4, dtype=np.int32)], "X")


if __name__ == "__main__":
    h.run_main(__file__)
