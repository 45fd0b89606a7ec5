"""HardSigmoid and HardSwish and their gradients through the op harness:
numpy references, finite differences away from the kinks, in place, and the
oneDNN path of large float32 HardSwish tensors."""
import numpy as np
import pytest

import op_harness as h

KINKS = {"HardSigmoid": None, "HardSwish": (-3.0, 3.0)}


def hard_sigmoid(x, alpha=0.2, beta=0.5):
    # The op's alpha and beta are float32 arguments.
    alpha, beta = float(np.float32(alpha)), float(np.float32(beta))
    return np.clip(alpha * x.astype(np.float64) + beta, 0, 1)


def hard_swish(x):
    x = x.astype(np.float64)
    return x * np.clip(x / 6 + 0.5, 0, 1)


def away_from(x, points, margin=0.05):
    for p in points:
        near = np.abs(x - p) < margin
        x = np.where(near, p + np.sign(x - p + 1e-12) * margin * 2, x)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [9, 4096, 50001])
def test_forward_matches_numpy(dtype, count):
    x = (np.random.RandomState(count).randn(count) * 4).astype(dtype)
    x[:4] = [-3.0, 3.0, 0.0, -2.5]
    tolerance = 1e-6 if dtype == np.float32 else 1e-12
    for op, reference in ((h.make_op("HardSigmoid", ["X"], ["Y"], alpha=0.3, beta=0.4),
                           lambda v: hard_sigmoid(v, 0.3, 0.4)),
                          (h.make_op("HardSigmoid", ["X"], ["Y"]), hard_sigmoid),
                          (h.make_op("HardSwish", ["X"], ["Y"]), hard_swish)):
        h.check_output(op, [x], lambda v: reference(v).astype(dtype), rtol=tolerance,
                       atol=tolerance)
        h.check_inplace(op, [x], rtol=0, atol=0)


def test_gradients():
    rng = np.random.RandomState(1)
    # HardSigmoid's kinks are where alpha x + beta is 0 or 1.
    x = away_from(rng.randn(3, 4, 5) * 4, [(0 - 0.4) / 0.3, (1 - 0.4) / 0.3])
    h.check_gradient(h.make_op("HardSigmoid", ["X"], ["Y"], alpha=0.3, beta=0.4), [x], [0])
    x = away_from(rng.randn(3, 4, 5) * 4, [-3.0, 3.0])
    h.check_gradient(h.make_op("HardSwish", ["X"], ["Y"]), [x], [0])


def test_hard_swish_gradient_at_the_ends():
    grad = h.gradient_ops(h.make_op("HardSwish", ["X"], ["Y"]))[0][0]
    x = np.array([-4.0, -3.0, 0.0, 1.5, 3.0, 4.0])
    dy = np.ones_like(x)
    np.testing.assert_allclose(h.run_op(grad, [x, dy])[0], [0, 0, 0.5, 1.0, 1, 1])


def test_bad_input():
    h.assert_op_error(h.make_op("HardSwish", ["X"], ["Y"]), [np.arange(3, dtype=np.int64)], "X")


if __name__ == "__main__":
    h.run_main(__file__)
