"""The parameter-update ops (momentum SGD, Adam, Adagrad, RmsProp, their sparse
forms), ClipTensorByScaling and LpNorm, against numpy update rules written
here, over several iterations with each run's outputs fed to the next."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

ITERATIONS = 4


def tolerance(dtype):
    return (1e-5, 1e-5) if np.dtype(dtype) == np.float32 else (1e-12, 1e-10)


def iterate(op, state, names, reference, feed_back, steps=ITERATIONS, extra=None):
    """Runs `op` `steps` times. `state` maps input names to arrays; after each
    run, reference(state) is compared with the outputs, and the outputs named
    in feed_back (output index -> input name) become the next inputs."""
    for step in range(steps):
        if extra:
            extra(state, step)
        inputs = [state[name] for name in op.input]
        got = h.run_op(op, inputs)
        want = reference(dict(state))
        for index, expected in want.items():
            atol, rtol = tolerance(got[index].dtype)
            np.testing.assert_allclose(got[index], expected, atol=atol, rtol=rtol,
                                       err_msg="%s step %d output %s" % (op.type, step, index))
            assert got[index].dtype == state[names[0]].dtype
        for index, name in feed_back.items():
            state[name] = got[index]


def draw_tensors(data, shape, dtype, count, positive=()):
    arrays = [data.draw(h.arrays(shape, dtype)) for _ in range(count)]
    for i in positive:
        arrays[i] = np.abs(arrays[i])
    return arrays


lr_values = st.floats(-0.5, 0.5)
dtypes = h.float_dtypes

# ----------------------------------------------------------- momentum SGD


def momentum_reference(g, m, lr, mu, nesterov):
    g, m = g.astype(np.float64), m.astype(np.float64)
    if nesterov:
        m_new = mu * m + lr * g
        step = (1 + mu) * m_new - mu * m
    else:
        m_new = lr * g + mu * m
        step = m_new
    return step, m_new


@given(h.dims(1, 3), dtypes, lr_values, st.floats(0, 0.99), st.booleans(), st.data())
def test_momentum_sgd_update(shape, dtype, lr, mu, nesterov, data):
    g, m, w = draw_tensors(data, tuple(shape), dtype, 3)
    op = h.make_op("MomentumSGDUpdate", ["g", "m", "lr", "w"], ["g_out", "m", "w"],
                   momentum=mu, nesterov=int(nesterov))
    lr32 = np.array([lr], np.float32)
    mu32 = float(np.float32(mu))

    def reference(s):
        step, m_new = momentum_reference(s["g"], s["m"], float(s["lr"][0]), mu32, nesterov)
        return {0: step, 1: m_new, 2: s["w"].astype(np.float64) - step}

    def new_gradient(state, step):
        state["g"] = data.draw(h.arrays(tuple(shape), dtype))

    iterate(op, {"g": g, "m": m, "lr": lr32, "w": w}, ["g"], reference, {1: "m", 2: "w"},
            extra=new_gradient)
    out_of_place = h.make_op("MomentumSGDUpdate", ["g", "m", "lr", "w"], ["g2", "m2", "w2"],
                             momentum=mu, nesterov=int(nesterov))
    assert h.check_inplace(out_of_place, [g, m, lr32, w]) == 3


@given(h.dims(1, 3), dtypes, lr_values, st.floats(0, 0.99), st.booleans(), st.data())
def test_momentum_sgd(shape, dtype, lr, mu, nesterov, data):
    g, m = draw_tensors(data, tuple(shape), dtype, 2)
    op = h.make_op("MomentumSGD", ["g", "m", "lr"], ["g_out", "m_out"],
                   momentum=mu, nesterov=int(nesterov))
    lr64 = np.array([lr], np.float64)  # a float64 rate drives float32 data too
    h.check_output(op, [g, m, lr64],
                   lambda g, m, lr: momentum_reference(g, m, lr[0], float(np.float32(mu)),
                                                       nesterov),
                   atol=1e-5, rtol=1e-5)
    assert h.check_inplace(op, [g, m, lr64]) == 2


def sparse_rows_reference(param_rows, indices, update_row):
    """Applies update_row(row_index, k) for each index in order (a repeated
    index sees the earlier update)."""
    for k, index in enumerate(indices):
        update_row(int(index), k)


@given(st.integers(1, 5), h.dims(0, 2, 1, 3), dtypes, lr_values, st.floats(0, 0.9),
       st.booleans(), st.data())
def test_sparse_momentum_sgd_update(rows, row_shape, dtype, lr, mu, nesterov, data):
    shape = (rows,) + tuple(row_shape)
    m, w = draw_tensors(data, shape, dtype, 2)
    count = data.draw(st.integers(0, 4))
    indices = data.draw(h.arrays((count,), data.draw(st.sampled_from([np.int32, np.int64])),
                                 elements=st.integers(0, rows - 1)))
    g = data.draw(h.arrays((count,) + tuple(row_shape), dtype))
    op = h.make_op("SparseMomentumSGDUpdate", ["g", "m", "lr", "w", "i"], ["g_out", "m", "w"],
                   momentum=mu, nesterov=int(nesterov))
    mu32 = float(np.float32(mu))

    def reference(s):
        m_new, w_new = s["m"].astype(np.float64), s["w"].astype(np.float64)
        g_out = np.zeros(g.shape)

        def update(index, k):
            step, moment = momentum_reference(s["g"][k], m_new[index], float(s["lr"][0]),
                                              mu32, nesterov)
            m_new[index] = moment
            w_new[index] -= step
            g_out[k] = step

        sparse_rows_reference(w_new, s["i"], update)
        return {0: g_out, 1: m_new, 2: w_new}

    iterate(op, {"g": g, "m": m, "lr": np.array([lr], np.float32), "w": w, "i": indices},
            ["g"], reference, {1: "m", 2: "w"})


# ------------------------------------------------------------------- Adam


@given(h.dims(1, 3), dtypes, lr_values, st.floats(0.5, 0.95), st.floats(0.9, 0.9999),
       st.sampled_from([1e-5, 1e-3]), st.integers(0, 50), st.booleans(), st.data())
def test_adam(shape, dtype, lr, beta1, beta2, epsilon, start, with_grad_out, data):
    w, m1, m2, g = draw_tensors(data, tuple(shape), dtype, 4, positive=(2,))
    outputs = ["w", "m1", "m2"] + (["g_out"] if with_grad_out else [])
    op = h.make_op("Adam", ["w", "m1", "m2", "g", "lr", "iter"], outputs,
                   beta1=beta1, beta2=beta2, epsilon=epsilon)
    b1, b2, eps = (float(np.float32(v)) for v in (beta1, beta2, epsilon))

    def reference(s):
        t = int(s["iter"][0]) + 1
        g = s["g"].astype(np.float64)
        m = b1 * s["m1"] + (1 - b1) * g
        v = b2 * s["m2"] + (1 - b2) * g * g
        step = np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
        want = {0: s["w"] + float(s["lr"][0]) * step, 1: m, 2: v}
        if with_grad_out:
            want[3] = step
        return want

    def next_iteration(state, step):
        state["iter"] = np.array([start + step], np.int64)

    iterate(op, {"w": w, "m1": m1, "m2": m2, "g": g, "lr": np.array([lr], np.float32)},
            ["w"], reference, {0: "w", 1: "m1", 2: "m2"}, extra=next_iteration)
    fresh = h.make_op("Adam", ["w", "m1", "m2", "g", "lr", "iter"], ["w2", "m12", "m22"])
    assert h.check_inplace(fresh, [w, m1, m2, g, np.array([lr], np.float32),
                                   np.array([start], np.int64)]) == 3


# ---------------------------------------------------------------- Adagrad


@given(h.dims(1, 3), dtypes, lr_values, st.sampled_from([1e-5, 1e-2]), st.floats(0.5, 1.0),
       st.integers(2, 4), st.data())
def test_adagrad(shape, dtype, lr, epsilon, decay, outputs, data):
    w, h_, g = draw_tensors(data, tuple(shape), dtype, 3, positive=(1,))
    names = ["w", "h", "effective_lr", "update"][:outputs]
    op = h.make_op("Adagrad", ["w", "h", "g", "lr"], names, epsilon=epsilon, decay=decay)
    eps, dec = float(np.float32(epsilon)), float(np.float32(decay))

    def reference(s):
        g = s["g"].astype(np.float64)
        moment = dec * s["h"] + g * g
        effective = float(s["lr"][0]) / (np.sqrt(moment) + eps)
        return {0: s["w"] + effective * g, 1: moment, 2: effective, 3: effective * g}

    def restricted(s):
        return {k: v for k, v in reference(s).items() if k < outputs}

    iterate(op, {"w": w, "h": h_, "g": g, "lr": np.array([lr], np.float32)}, ["w"],
            restricted, {0: "w", 1: "h"})
    fresh = h.make_op("Adagrad", ["w", "h", "g", "lr"], ["w2", "h2"], epsilon=epsilon)
    assert h.check_inplace(fresh, [w, h_, g, np.array([lr], np.float32)]) == 2


@given(st.integers(1, 5), h.dims(0, 2, 1, 3), dtypes, lr_values, st.data())
def test_sparse_adagrad(rows, row_shape, dtype, lr, data):
    shape = (rows,) + tuple(row_shape)
    w, h_ = draw_tensors(data, shape, dtype, 2, positive=(1,))
    count = data.draw(st.integers(0, 4))
    indices = data.draw(h.arrays((count,), np.int64, elements=st.integers(0, rows - 1)))
    g = data.draw(h.arrays((count,) + tuple(row_shape), dtype))
    op = h.make_op("SparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=1e-3)
    eps = float(np.float32(1e-3))

    def reference(s):
        w_new, h_new = s["w"].astype(np.float64), s["h"].astype(np.float64)

        def update(index, k):
            gk = s["g"][k].astype(np.float64)
            h_new[index] += gk * gk
            w_new[index] += float(s["lr"][0]) * gk / (np.sqrt(h_new[index]) + eps)

        sparse_rows_reference(w_new, s["i"], update)
        return {0: w_new, 1: h_new}

    iterate(op, {"w": w, "h": h_, "i": indices, "g": g, "lr": np.array([lr], np.float32)},
            ["w"], reference, {0: "w", 1: "h"})


@given(st.integers(1, 5), h.dims(0, 2, 1, 3), dtypes, lr_values, st.data())
def test_row_wise_sparse_adagrad(rows, row_shape, dtype, lr, data):
    shape = (rows,) + tuple(row_shape)
    w, = draw_tensors(data, shape, dtype, 1)
    h_ = data.draw(h.arrays((rows,), dtype, elements=st.floats(0.125, 2, width=32)))
    count = data.draw(st.integers(0, 4))
    indices = data.draw(h.arrays((count,), np.int32, elements=st.integers(0, rows - 1)))
    g = data.draw(h.arrays((count,) + tuple(row_shape), dtype))
    op = h.make_op("RowWiseSparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"], epsilon=1e-3)
    eps = float(np.float32(1e-3))

    def reference(s):
        w_new, h_new = s["w"].astype(np.float64), s["h"].astype(np.float64)

        def update(index, k):
            gk = s["g"][k].astype(np.float64)
            h_new[index] += np.mean(gk * gk) if gk.size else 0.0
            w_new[index] += float(s["lr"][0]) * gk / (np.sqrt(h_new[index]) + eps)

        sparse_rows_reference(w_new, s["i"], update)
        return {0: w_new, 1: h_new}

    iterate(op, {"w": w, "h": h_, "i": indices, "g": g, "lr": np.array([lr], np.float32)},
            ["w"], reference, {0: "w", 1: "h"})


@given(st.integers(1, 5), h.dims(0, 2, 1, 3), dtypes, lr_values, st.booleans(),
       st.integers(0, 20), st.data())
def test_sparse_adam(rows, row_shape, dtype, lr, row_wise, start, data):
    shape = (rows,) + tuple(row_shape)
    w, m1 = draw_tensors(data, shape, dtype, 2)
    m2_shape = (rows,) if row_wise else shape
    m2 = data.draw(h.arrays(m2_shape, dtype, elements=st.floats(0.125, 2, width=32)))
    count = data.draw(st.integers(0, 4))
    indices = data.draw(h.arrays((count,), np.int64, elements=st.integers(0, rows - 1)))
    g = data.draw(h.arrays((count,) + tuple(row_shape), dtype))
    beta1, beta2, eps = 0.9, 0.99, 1e-3
    op = h.make_op("RowWiseSparseAdam" if row_wise else "SparseAdam",
                   ["w", "m1", "m2", "i", "g", "lr", "it"], ["w", "m1", "m2"],
                   beta1=beta1, beta2=beta2, epsilon=eps)
    beta1, beta2, eps = (float(np.float32(v)) for v in (beta1, beta2, eps))

    def reference(s):
        w_new, m1_new, m2_new = (s[k].astype(np.float64) for k in ("w", "m1", "m2"))
        t = int(s["it"][0]) + 1
        correction = np.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)

        def update(index, k):
            gk = s["g"][k].astype(np.float64)
            m1_new[index] = beta1 * m1_new[index] + (1 - beta1) * gk
            square = (np.mean(gk * gk) if gk.size else 0.0) if row_wise else gk * gk
            m2_new[index] = beta2 * m2_new[index] + (1 - beta2) * square
            w_new[index] += (float(s["lr"][0]) * correction * m1_new[index] /
                             (np.sqrt(m2_new[index]) + eps))

        sparse_rows_reference(w_new, s["i"], update)
        return {0: w_new, 1: m1_new, 2: m2_new}

    iterate(op, {"w": w, "m1": m1, "m2": m2, "i": indices, "g": g,
                 "lr": np.array([lr], np.float32), "it": np.array([start], np.int64)},
            ["w"], reference, {0: "w", 1: "m1", 2: "m2"})


# ------------------------------------------------------------- Ftrl, Lars


def ftrl_reference(w, n, z, g, alpha, beta, l1, l2):
    new_n = n + g * g
    z = z + g - (np.sqrt(new_n) - np.sqrt(n)) / alpha * w
    w = np.where(np.abs(z) > l1, (l1 * np.sign(z) - z) / ((beta + np.sqrt(new_n)) / alpha + l2),
                 0.0)
    return w, new_n, z


@given(st.integers(1, 4), h.dims(0, 2, 1, 3), dtypes, st.booleans(), st.booleans(), st.data())
def test_ftrl(rows, row_shape, dtype, sparse, alpha_input, data):
    shape = (rows,) + tuple(row_shape)
    w, = draw_tensors(data, shape, dtype, 1)
    nz = np.zeros(shape + (2,), dtype)
    nz[..., 0] = np.abs(data.draw(h.arrays(shape, dtype)))
    args = dict(alpha=0.5, beta=0.2, lambda1=0.05, lambda2=0.01)
    if sparse:
        count = data.draw(st.integers(0, 4))
        indices = data.draw(h.arrays((count,), np.int32, elements=st.integers(0, rows - 1)))
        g = data.draw(h.arrays((count,) + tuple(row_shape), dtype))
        names, state = ["w", "nz", "i", "g"], {"w": w, "nz": nz, "i": indices, "g": g}
    else:
        g = data.draw(h.arrays(shape, dtype))
        names, state = ["w", "nz", "g"], {"w": w, "nz": nz, "g": g}
    alpha = args["alpha"]
    if alpha_input:
        alpha = 0.25  # the input overrides the argument
        names.append("alpha")
        state["alpha"] = np.array([alpha], dtype)
    op = h.make_op("SparseFtrl" if sparse else "Ftrl", names, ["w", "nz"], **args)
    beta, l1, l2 = (float(np.float32(args[k])) for k in ("beta", "lambda1", "lambda2"))

    def reference(s):
        w_new, nz_new = s["w"].astype(np.float64), s["nz"].astype(np.float64)
        rows_and_grads = (zip(s["i"], s["g"].astype(np.float64)) if sparse
                          else [(Ellipsis, s["g"].astype(np.float64))])
        for index, grad in rows_and_grads:
            w_new[index], nz_new[index][..., 0], nz_new[index][..., 1] = ftrl_reference(
                w_new[index], nz_new[index][..., 0], nz_new[index][..., 1], grad, alpha, beta,
                l1, l2)
        return {0: w_new, 1: nz_new}

    iterate(op, state, ["w"], reference, {0: "w", 1: "nz"})


@given(h.dims(1, 3), dtypes, st.sampled_from([0.0, 0.5, 2.0]), st.data())
def test_lars(shape, dtype, offset, data):
    x, dx = draw_tensors(data, tuple(shape), dtype, 2)
    op = h.make_op("Lars", ["X", "dX"], ["rescale"], offset=offset)

    def reference(x, dx):
        norm = np.linalg.norm(x.astype(np.float64))
        if norm == 0:
            return np.ones(1, dtype)
        with np.errstate(divide="ignore"):
            return np.array([1.0 / (np.linalg.norm(dx.astype(np.float64)) / norm + offset)],
                            dtype)

    h.check_output(op, [x, dx], reference)


def test_lars_and_ftrl_errors():
    h.assert_op_error(h.make_op("Lars", ["X", "dX"], ["r"]),
                      [np.ones(3, np.float32), np.ones(2, np.float32)], "'dX'")
    h.assert_op_error(h.make_op("Ftrl", ["w", "nz", "g"], ["w", "nz"]),
                      [np.ones(3, np.float32), np.ones(3, np.float32), np.ones(3, np.float32)],
                      "(n, z)")
    h.assert_op_error(h.make_op("SparseFtrl", ["w", "nz", "i", "g"], ["w", "nz"]),
                      [np.ones((2, 1), np.float32), np.zeros((2, 1, 2), np.float32),
                       np.array([2], np.int64), np.ones((1, 1), np.float32)], "index 2")


# ---------------------------------------------------------------- RmsProp


@given(h.dims(1, 3), dtypes, lr_values, st.floats(0.5, 0.99), st.floats(0, 0.9),
       st.sampled_from([1e-5, 1e-2]), st.data())
def test_rmsprop(shape, dtype, lr, decay, momentum, epsilon, data):
    g, ms, mom = draw_tensors(data, tuple(shape), dtype, 3, positive=(1,))
    op = h.make_op("RmsProp", ["g", "ms", "mom", "lr"], ["g_out", "ms", "mom"],
                   decay=decay, momentum=momentum, epsilon=epsilon)
    d, mu, eps = (float(np.float32(v)) for v in (decay, momentum, epsilon))

    def reference(s):
        g = s["g"].astype(np.float64)
        ms = s["ms"] + (1 - d) * (g * g - s["ms"])
        mom = mu * s["mom"] + float(s["lr"][0]) * g / np.sqrt(eps + ms)
        return {0: mom, 1: ms, 2: mom}

    iterate(op, {"g": g, "ms": ms, "mom": mom, "lr": np.array([lr], np.float32)}, ["g"],
            reference, {1: "ms", 2: "mom"})
    fresh = h.make_op("RmsProp", ["g", "ms", "mom", "lr"], ["g2", "ms2", "mom2"])
    assert h.check_inplace(fresh, [g, ms, mom, np.array([lr], np.float32)]) == 3


# ---------------------------------------------------- clipping and norms


@given(h.dims(1, 3), dtypes, st.floats(0.1, 3), st.floats(0.01, 5),
       st.one_of(st.none(), st.floats(0.1, 2)), st.data())
def test_clip_tensor_by_scaling(shape, dtype, threshold, value, additional, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    inputs = [x, np.array([value], np.float32)]
    names = ["x", "val"]
    if additional is not None:
        inputs.append(np.array([additional], np.float32))
        names.append("extra")
    op = h.make_op("ClipTensorByScaling", names, ["y"], threshold=threshold)
    limit = float(np.float32(threshold)) * (1.0 if additional is None
                                            else float(np.float32(additional)))
    v = float(np.float32(value))
    h.check_output(op, inputs, lambda x, *rest: x * (limit / v) if v > limit else x,
                   atol=1e-6, rtol=1e-5)
    assert h.check_inplace(op, inputs) == 1


def test_clip_tensor_by_scaling_by_hand():
    x = np.array([3.0, 4.0], np.float32)
    op = h.make_op("ClipTensorByScaling", ["x", "val"], ["y"], threshold=1.0)
    h.check_output(op, [x, np.array([5.0], np.float32)], lambda *_: np.array([0.6, 0.8]))
    h.check_output(op, [x, np.array([0.5], np.float32)], lambda *_: x)
    scaled = h.make_op("ClipTensorByScaling", ["x", "val", "extra"], ["y"], threshold=1.0)
    h.check_output(scaled, [x, np.array([5.0], np.float32), np.array([10.0], np.float32)],
                   lambda *_: x)
    h.check_output(scaled, [x, np.array([5.0], np.float32), np.array([2.0], np.float32)],
                   lambda *_: np.array([1.2, 1.6]))


@st.composite
def away_from_zero(draw, dtype=np.float64):
    """Values with |x| in [0.1, 1]: |x| is differentiable there."""
    shape = tuple(draw(h.dims(1, 3)))
    magnitude = draw(h.arrays(shape, dtype, elements=st.floats(0.1, 1)))
    signs = draw(h.arrays(shape, np.int8, elements=st.sampled_from([-1, 1])))
    return magnitude * signs


@given(away_from_zero(), st.sampled_from([1, 2]), st.booleans(), dtypes)
def test_lp_norm(x, p, average, dtype):
    x = x.astype(dtype)
    op = h.make_op("LpNorm", ["X"], ["Z"], p=p, average=int(average))
    reference = lambda x: np.array([np.sum(np.abs(x) ** p) / (x.size if average else 1)])
    h.check_output(op, [x], reference, output_dtypes=[dtype])
    h.check_gradient(op, [x.astype(np.float64)], [0])


def test_optimizer_device():
    w = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
    lr = np.array([0.1], np.float32)
    h.check_device(h.make_op("MomentumSGDUpdate", ["g", "m", "lr", "w"], ["g", "m", "w"]),
                   [w, w, lr, w])
    h.check_device(h.make_op("LpNorm", ["X"], ["Z"]), [w])


def test_bad_inputs():
    lr = np.array([0.1], np.float32)
    x = np.ones((2, 3), np.float32)
    momentum = h.make_op("MomentumSGDUpdate", ["g", "m", "lr", "w"], ["g", "m", "w"])
    h.assert_op_error(momentum, [x, np.ones(5, np.float32), lr, x], "'m' has 5 elements")
    h.assert_op_error(momentum, [x, x, np.ones(2, np.float32), x],
                      "the learning rate 'lr' must hold one element")
    h.assert_op_error(momentum, [x, x, np.array([1], np.int32), x], "'lr' holds int32")
    h.assert_op_error(momentum, [x, x, lr, x.astype(np.float64)], "'w' holds float64")
    ints = x.astype(np.int32)
    h.assert_op_error(momentum, [ints, ints, lr, ints], "'g' holds int32",
                      "supported types are float32, float64")
    adam = h.make_op("Adam", ["w", "m1", "m2", "g", "lr", "iter"], ["w", "m1", "m2"])
    h.assert_op_error(adam, [x, x, x, x, lr, np.array([1], np.int32)],
                      "'iter' holds int32", "int64")
    sparse = h.make_op("SparseAdagrad", ["w", "h", "i", "g", "lr"], ["w", "h"])
    h.assert_op_error(sparse, [x, x, np.array([0, 2], np.int64), x, lr],
                      "index 2 at position 1 of 'i'", "[0, 2)")
    h.assert_op_error(sparse, [x, x, np.array([0], np.int64), x, lr], "'g' has 6 elements")
    smom = h.make_op("SparseMomentumSGDUpdate", ["g", "m", "lr", "w", "i"], ["g", "m", "w"])
    h.assert_op_error(smom, [x[:1], x, lr, x, np.array([-1], np.int32)],
                      "index -1 at position 0 of 'i'")
    not_in_place = h.make_op("SparseAdagrad", ["w", "h", "i", "g", "lr"], ["w2", "h"])
    h.assert_op_error(not_in_place, [x, x, np.array([0], np.int64), x[:1], lr])
    clip = h.make_op("ClipTensorByScaling", ["x", "val"], ["y"])
    h.assert_op_error(clip, [x, lr], "threshold must be > 0")
    clip = h.make_op("ClipTensorByScaling", ["x", "val"], ["y"], threshold=1.0)
    h.assert_op_error(clip, [x, np.ones(2, np.float32)], "'val' must hold one element")
    h.assert_op_error(clip, [np.ones(0, np.float32), lr], "'x' is empty")
    norm = h.make_op("LpNorm", ["X"], ["Z"], p=3)
    h.assert_op_error(norm, [x], "p must be 1 or 2")


if __name__ == "__main__":
    h.run_main(__file__)
