"""Iter, AtomicIter, CreateMutex and LearningRate: counters over several runs
and every learning-rate policy against formulas written here."""
import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from doppio import _C
from doppio.proto import doppio_pb2
import op_harness as h

# ---------------------------------------------------------------- counters


def run_net_repeatedly(ops, feeds, times, fetch):
    """Runs a net of `ops` `times` times in a fresh workspace."""
    net = doppio_pb2.NetDef(name="counter_net")
    net.op.extend(ops)
    with h._FreshWorkspace():
        for name, value in feeds.items():
            _C.feed_blob(name, value)
        _C.create_net(net.SerializeToString())
        _C.run_net("counter_net", times)
        return _C.fetch_blob(fetch)


@given(st.integers(0, 1000), st.integers(1, 5))
def test_iter_counts_runs(start, times):
    op = h.make_op("Iter", ["iter"], ["iter"])
    got = run_net_repeatedly([op], {"iter": np.array([start], np.int64)}, times, "iter")
    np.testing.assert_array_equal(got, np.array([start + times], np.int64))


def test_iter_without_input_starts_at_zero():
    op = h.make_op("Iter", [], ["iter"])
    for times in (1, 3):
        got = run_net_repeatedly([op], {}, times, "iter")
        np.testing.assert_array_equal(got, np.array([times], np.int64))


def test_atomic_iter_with_mutex():
    ops = [h.make_op("CreateMutex", [], ["mutex"]),
           h.make_op("AtomicIter", ["mutex", "iter"], ["iter"])]
    got = run_net_repeatedly(ops, {"iter": np.array([7], np.int64)}, 4, "iter")
    np.testing.assert_array_equal(got, np.array([11], np.int64))


def test_counter_errors():
    op = h.make_op("Iter", ["iter"], ["iter"])
    h.assert_op_error(op, [np.array([1.0], np.float32)], "'iter' holds float32", "int64")
    h.assert_op_error(op, [np.array([1, 2], np.int64)], "'iter' must hold one element")
    h.assert_op_error(op, [np.array([-3], np.int64)], "'iter' is negative")
    h.assert_op_error(op, [np.array([np.iinfo(np.int64).max], np.int64)], "overflow")
    atomic = h.make_op("AtomicIter", ["mutex", "iter"], ["iter"])
    h.assert_op_error(atomic, [np.zeros(1), np.array([0], np.int64)], "('mutex')", "mutex")
    not_in_place = h.make_op("Iter", ["iter"], ["other"])
    h.assert_op_error(not_in_place, [np.array([0], np.int64)])


# ----------------------------------------------------------- LearningRate


def multiplier(policy, it, a):
    """Caffe2's learning_rate_functors.h, written out again."""
    if policy == "fixed":
        return 1.0
    if policy == "step":
        return a["gamma"] ** (it // a["stepsize"])
    if policy == "multistep":
        return a["gamma"] ** sum(1 for s in a["stepsizes"] if it >= s)
    if policy == "exp":
        return a["gamma"] ** it
    if policy == "inv":
        return (1 + a["gamma"] * it) ** -a["power"]
    if policy == "poly":
        return (1 - it / a["max_iter"]) ** a["power"]
    if policy == "linearWarmup":
        if it >= a["num_iter"]:
            return 1.0
        return a["start_multiplier"] + (1 - a["start_multiplier"]) * it / a["num_iter"]
    if policy == "constantWarmup":
        return a["multiplier"] if it < a["num_iter"] else 1.0
    if policy == "alter":
        cycle = a["active_period"] + a["inactive_period"]
        active = (it % cycle) < a["active_period"]
        return 1.0 if active else 0.0
    if policy == "hill":
        if it < a["num_iter"]:
            return multiplier("linearWarmup", it, a)
        inv = (1 + a["gamma"] * (it - a["num_iter"])) ** -a["power"]
        return max(a["end_multiplier"], inv)
    if policy == "cosine":
        period, t_mult = a["period"], a["t_mult"]
        if t_mult != 1:
            i = math.floor(math.log(1 - it / period * (1 - t_mult)) / math.log(t_mult))
            length = t_mult ** i * period
            position = it - (1 - t_mult ** i) / (1 - t_mult) * period
        else:
            i = it // period
            length = period
            position = it - i * period
        shrink = a["lr_shrink"] ** i
        low, high = a["min_lr"] * shrink, a["max_lr"] * shrink
        return low + 0.5 * (high - low) * (1 + math.cos(math.pi * position / length))
    raise ValueError(policy)


unit = st.floats(0.05, 0.95)
# Each policy's arguments; every policy gets its own test run.
policy_arguments = {
    "fixed": st.just({}),
    "step": st.fixed_dictionaries({"stepsize": st.integers(1, 20), "gamma": unit}),
    "multistep": st.fixed_dictionaries({
        "stepsizes": st.lists(st.integers(0, 60), min_size=1, max_size=4).map(sorted),
        "gamma": unit}),
    "exp": st.fixed_dictionaries({"gamma": st.floats(0.9, 1.0)}),
    "inv": st.fixed_dictionaries({"gamma": unit, "power": st.floats(0.1, 2)}),
    "poly": st.fixed_dictionaries({"max_iter": st.integers(60, 200),
                                   "power": st.floats(0.5, 3)}),
    "linearWarmup": st.fixed_dictionaries({"start_multiplier": unit,
                                           "num_iter": st.integers(1, 40)}),
    "constantWarmup": st.fixed_dictionaries({"multiplier": unit,
                                             "num_iter": st.integers(0, 40)}),
    "alter": st.fixed_dictionaries({"active_period": st.integers(1, 9),
                                    "inactive_period": st.integers(0, 9)}),
    "hill": st.fixed_dictionaries({"num_iter": st.integers(1, 20), "start_multiplier": unit,
                                   "gamma": unit, "power": st.floats(0.1, 2),
                                   "end_multiplier": st.floats(0, 0.5)}),
    "cosine": st.fixed_dictionaries({"min_lr": st.floats(0, 0.5), "max_lr": st.floats(0.5, 1.5),
                                     "period": st.integers(1, 20),
                                     "t_mult": st.sampled_from([1.0, 1.5, 2.0]),
                                     "lr_shrink": st.floats(0.5, 1.0)}),
}


def learning_rate(iteration, **args):
    op = h.make_op("LearningRate", ["iter"], ["lr"], **args)
    return h.run_op(op, [np.array([iteration], np.int64)])[0]


@pytest.mark.parametrize("policy", sorted(policy_arguments))
@given(data=st.data(), base_lr=st.floats(-1, 1).filter(lambda x: abs(x) > 1e-3),
       iterations=st.lists(st.integers(0, 60), min_size=1, max_size=8))
def test_learning_rate_policies(policy, data, base_lr, iterations):
    args = data.draw(policy_arguments[policy])
    if policy == "alter":
        args = dict(args, active_first=True)
    # The argument values travel as float32, so the reference uses them too.
    f32 = {k: (float(np.float32(v)) if isinstance(v, float) else v) for k, v in args.items()}
    for it in iterations:
        got = learning_rate(it, base_lr=base_lr, policy=policy, **args)
        assert got.dtype == np.float32 and got.shape == ()
        want = float(np.float32(base_lr)) * multiplier(policy, it, f32)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7,
                                   err_msg="%s %r at iteration %d" % (policy, args, it))


def test_learning_rate_alter_inactive_first_and_lr_scale():
    for it in range(12):
        got = learning_rate(it, base_lr=-0.5, policy="alter", active_first=False,
                            active_period=2, inactive_period=3, lr_scale=3.0)
        # Inactive (0) for the first 3 of every 5 iterations, then active.
        want = 0.0 if it % 5 < 3 else -1.5
        np.testing.assert_allclose(got, want)


def test_learning_rate_composite():
    args = dict(base_lr=0.1, policy="composite", sub_policy_num_iters=[3, 4],
                sub_policy_0_policy="fixed", sub_policy_0_lr_scale=2.0,
                sub_policy_1_policy="exp", sub_policy_1_gamma=0.5)
    # Sub-policies count from iteration 1: fixed on 1..3, exp from 4 on (with
    # the global iteration), iteration 0 taken by the first.
    expected = {0: 0.2, 1: 0.2, 3: 0.2, 4: 0.1 * 0.5 ** 4, 7: 0.1 * 0.5 ** 7,
                10: 0.1 * 0.5 ** 10}
    for it, want in expected.items():
        np.testing.assert_allclose(learning_rate(it, **args), want, rtol=1e-6)


def test_learning_rate_by_hand():
    # Caffe2's doc example: base_lr -0.1, step 20, gamma 0.9 at iteration 200.
    np.testing.assert_allclose(
        learning_rate(200, base_lr=-0.1, policy="step", stepsize=20, gamma=0.9),
        -0.1 * 0.9 ** 10, rtol=1e-6)
    np.testing.assert_allclose(
        learning_rate(5, base_lr=1.0, policy="cosine", min_lr=0.0, max_lr=1.0, period=10),
        0.5, atol=1e-7)


def test_learning_rate_errors():
    op = h.make_op("LearningRate", ["iter"], ["lr"], base_lr=0.1, policy="fixed")
    h.assert_op_error(op, [np.array([3], np.int32)], "'iter' holds int32", "int64")
    h.assert_op_error(op, [np.array([3, 4], np.int64)], "'iter' must hold one element")
    for args, fragment in [
            (dict(base_lr=0.1, policy="bogus"), "unknown learning rate policy 'bogus'"),
            (dict(policy="fixed"), "base_lr"),
            (dict(base_lr=0.1), "policy"),
            (dict(base_lr=0.1, policy="step", gamma=0.5), "stepsize"),
            (dict(base_lr=0.1, policy="poly", power=1.0), "max_iter"),
            (dict(base_lr=0.1, policy="multistep", gamma=0.5), "stepsizes"),
            (dict(base_lr=0.1, policy="composite"), "sub_policy_num_iters"),
            (dict(base_lr=0.1, policy="composite", sub_policy_num_iters=[2],
                  sub_policy_0_policy="composite"), "composite")]:
        bad = h.make_op("LearningRate", ["iter"], ["lr"], **args)
        h.assert_op_error(bad, [np.array([1], np.int64)], fragment)


def test_learning_rate_device():
    op = h.make_op("LearningRate", ["iter"], ["lr"], base_lr=-0.1, policy="exp", gamma=0.9)
    h.check_device(op, [np.array([4], np.int64)])


if __name__ == "__main__":
    h.run_main(__file__)
