"""YellowFin against a float64 numpy model of the paper's tuner
(https://arxiv.org/abs/1706.03471), step by step over several iterations;
out of place equals in place; malformed state is an error naming it."""
import numpy as np
import pytest

import op_harness as h

NAMES = ['param', 'moment', 'lr_avg', 'mu_avg', 'curv_win', 'g_avg', 'g2_avg', 'scalars',
         'grad', 'iter']


def numpy_yellowfin(state, grad, it, beta=0.999, width=4, eps=1e-6, zero_debias=True,
                    nesterov=False):
    """One step: (param, moment, lr, mu, window, g_avg, g2_avg, scalars)."""
    param, moment, lr, mu, window, g_avg, g2_avg, scalars = [np.array(s, np.float64)
                                                             for s in state]
    grad = grad.astype(np.float64)
    deb = 1.0 / (1.0 - beta ** it) if zero_debias else 1.0
    ma = lambda value, avg: beta * avg + (1 - beta) * value  # noqa: E731
    new_moment = mu[0] * moment + lr[0] * grad
    if nesterov:
        param = param - (1 + mu[0]) * new_moment + mu[0] * moment
    else:
        param = param - new_moment
    g_avg, g2_avg = ma(grad, g_avg), ma(grad ** 2, g2_avg)
    g_norm2 = max(eps, float(np.sum(grad ** 2)))
    scalars = scalars.copy()
    scalars[1] = ma(g_norm2, scalars[1])
    scalars[0] = ma(np.sqrt(g_norm2), scalars[0])
    window = window.copy()
    window[(it - 1) % width] = np.log(g_norm2)
    valid = window[:min(width, it)]
    scalars[2], scalars[3] = ma(valid.min(), scalars[2]), ma(valid.max(), scalars[3])
    h_min = max(eps, np.exp(deb * scalars[2]))
    h_max = max(eps, np.exp(deb * scalars[3]))
    variance = max(eps, deb * scalars[1] - np.sum((deb * g_avg) ** 2))
    scalars[4] = ma(scalars[0] / scalars[1], scalars[4])
    distance = deb * scalars[4]
    new_lr, new_mu = lr.copy(), mu.copy()
    if it > 1:
        # The cubic's real root, then the curvature-range bound.
        p = (distance * h_min) ** 2 / (2 * variance)
        w3 = (-np.sqrt(p * p + 4.0 / 27.0 * p ** 3) - p) / 2.0
        w = np.sign(w3) * np.abs(w3) ** (1.0 / 3.0)
        root = w - p / 3.0 / w + 1.0
        ratio = np.sqrt(h_max / h_min)
        m = max(root ** 2, ((ratio - 1) / (ratio + 1)) ** 2)
        new_mu = np.array([ma(m, mu[0])])
        new_lr = np.array([ma((1 - np.sqrt(m)) ** 2 / h_min, lr[0])])
    return [param, new_moment, new_lr, new_mu, window, g_avg, g2_avg, scalars]


@pytest.mark.parametrize('zero_debias,nesterov', [(True, False), (False, False), (True, True)])
def test_yellowfin_follows_the_numpy_model_over_iterations(zero_debias, nesterov):
    rng = np.random.RandomState(7)
    shape = (3, 2)
    state = [rng.randn(*shape), np.zeros(shape), np.array([0.1]), np.array([0.0]),
             np.zeros(4), np.zeros(shape), np.zeros(shape), np.zeros(5)]
    state = [np.asarray(s, np.float32) for s in state]
    op = h.make_op('YellowFin', NAMES, NAMES[:8], curv_win_width=4, zero_debias=zero_debias,
                   nesterov=int(nesterov))
    for it in range(1, 8):
        grad = (rng.randn(*shape) * it).astype(np.float32)
        inputs = state + [grad, np.array([it], np.int64)]
        expected = numpy_yellowfin(state, grad, it, zero_debias=zero_debias,
                                   nesterov=nesterov)
        state = h.check_output(op, inputs, lambda *_: expected, atol=1e-5, rtol=2e-4)[:8]


def test_yellowfin_in_place_matches_out_of_place():
    rng = np.random.RandomState(1)
    shape = (5,)
    state = [rng.randn(*shape), rng.randn(*shape) * 0.1, np.array([0.05]), np.array([0.3]),
             rng.randn(20), np.abs(rng.randn(*shape)), np.abs(rng.randn(*shape)),
             np.abs(rng.randn(5)) + 0.5]
    inputs = [np.asarray(s, np.float32) for s in state] + [
        rng.randn(*shape).astype(np.float32), np.array([3], np.int64)]
    op = h.make_op('YellowFin', NAMES, ['o%d' % k for k in range(8)])
    assert h.check_inplace(op, inputs) == 8


def test_yellowfin_names_malformed_state():
    shape = (2,)
    good = [np.zeros(shape, np.float32), np.zeros(shape, np.float32), np.array([0.1], np.float32),
            np.array([0.0], np.float32), np.zeros(20, np.float32), np.zeros(shape, np.float32),
            np.zeros(shape, np.float32), np.zeros(5, np.float32), np.ones(shape, np.float32),
            np.array([1], np.int64)]
    op = h.make_op('YellowFin', NAMES, NAMES[:8])
    bad_grad = list(good)
    bad_grad[8] = np.ones(3, np.float32)
    h.assert_op_error(op, bad_grad, "'grad'", "param's shape")
    bad_window = list(good)
    bad_window[4] = np.zeros(3, np.float32)
    h.assert_op_error(op, bad_window, "'curv_win'", 'curv_win_width (20)')
    bad_iter = list(good)
    bad_iter[9] = np.array([0], np.int64)
    h.assert_op_error(op, bad_iter, 'iter must be at least 1')


if __name__ == '__main__':
    h.run_main(__file__)
