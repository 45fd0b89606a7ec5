"""Dropout and DropoutGrad through the op harness, against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h
from doppio.proto import doppio_pb2


def seeded(seed):
    return doppio_pb2.DeviceOption(random_seed=seed)


def dropout(ratio=None, is_test=None, seed=1, outputs=("Y", "mask")):
    args = {}
    if ratio is not None:
        args["ratio"] = ratio
    if is_test is not None:
        args["is_test"] = is_test
    return h.make_op("Dropout", ["X"], list(outputs), device_option=seeded(seed), **args)


ratios = st.sampled_from([0.0, 0.1, 0.5, 0.75]).map(float)


@st.composite
def inputs(draw, dtype=None):
    dtype = dtype or draw(h.float_dtypes)
    return draw(h.arrays(tuple(draw(h.dims(0, 4))), dtype))


@given(inputs(), ratios, st.integers(0, 2 ** 31))
def test_training_scales_the_kept_elements(x, ratio, seed):
    op = dropout(ratio, seed=seed)
    y, mask = h.run_op(op, [x])
    assert mask.dtype == np.bool_ and mask.shape == x.shape
    # The mask is random; given it, Y is determined.
    expected = np.where(mask, x / (1 - np.float32(ratio)).astype(x.dtype), 0).astype(x.dtype)
    np.testing.assert_allclose(y, expected, rtol=1e-6 if x.dtype == np.float32 else 1e-12)
    assert y.dtype == x.dtype
    if ratio == 0.0:
        assert mask.all()
    assert h.check_inplace(op, [x]) == 1  # same seed, same mask


@given(ratios)
def test_keep_rate_is_one_minus_ratio(ratio):
    n = 20000
    _, mask = h.run_op(dropout(ratio, seed=7), [np.ones(n, np.float32)])
    p = 1 - ratio
    # Five standard deviations of a binomial proportion.
    assert abs(mask.mean() - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12


def test_seed_fixes_the_mask():
    x = np.ones((50, 40), np.float32)
    first = h.run_op(dropout(0.5, seed=3), [x])[1]
    again = h.run_op(dropout(0.5, seed=3), [x])[1]
    other = h.run_op(dropout(0.5, seed=4), [x])[1]
    np.testing.assert_array_equal(first, again)
    assert (first != other).any()


@given(inputs(), ratios, st.sampled_from([1, 2]))
def test_test_mode_copies(x, ratio, num_outputs):
    op = dropout(ratio, is_test=1, outputs=("Y", "mask")[:num_outputs])
    outs = h.check_output(op, [x], lambda x: x, outputs_to_check=[0])
    if num_outputs == 2:
        assert outs[1].dtype == np.bool_ and outs[1].shape == x.shape and outs[1].all()
    assert h.check_inplace(op, [x]) == 1


@given(inputs(np.float64), ratios, st.sampled_from([0, 1]))
def test_gradient(x, ratio, is_test):
    # A seeded op repeats its mask, so finite differences see one function.
    op = dropout(ratio, is_test=is_test)
    h.check_gradient(op, [x], [0], outputs_with_grad=[0])


@given(inputs(), ratios)
def test_dropout_grad_matches_numpy(dy, ratio):
    mask = np.random.RandomState(dy.size).rand(*dy.shape) < 0.5
    op = h.make_op("DropoutGrad", ["dY", "mask"], ["dX"], ratio=ratio)
    h.check_output(op, [dy, mask],
                   lambda dy, m: (dy * m / (1 - np.float32(ratio))).astype(dy.dtype),
                   rtol=1e-6 if dy.dtype == np.float32 else 1e-12)
    assert h.check_inplace(op, [dy, mask]) == 1


def test_gradient_maker_follows_is_test():
    ops, _ = h.gradient_ops(dropout(0.3))
    assert list(ops[0].input) == ["Y_grad", "mask"] and ops[0].type == "DropoutGrad"
    ops, _ = h.gradient_ops(dropout(0.3, is_test=1))
    assert list(ops[0].input) == ["Y_grad"]
    assert {a.name for a in ops[0].arg} == {"ratio", "is_test"}


def test_device():
    h.check_device(dropout(0.5, is_test=1), [np.ones((3, 4), np.float32)])


# ------------------------------------------------------------ bad input


@pytest.mark.parametrize("ratio", [-0.1, 1.0, 1.5])
def test_ratio_outside_0_1_is_refused(ratio):
    h.assert_op_error(dropout(ratio), [np.ones(3, np.float32)], "ratio", "[0, 1)")


def test_training_needs_the_mask_output():
    h.assert_op_error(dropout(0.5, outputs=("Y",)), [np.ones(3, np.float32)], "mask",
                      "is_test")


def test_integer_input_is_refused():
    h.assert_op_error(dropout(0.5), [np.ones(3, np.int32)], "'X'", "int32")


def test_dropout_grad_checks_the_mask():
    op = h.make_op("DropoutGrad", ["dY", "mask"], ["dX"])
    h.assert_op_error(op, [np.ones(3), np.ones(3)], "'mask'", "bool")
    h.assert_op_error(op, [np.ones(3), np.ones(4, np.bool_)], "'mask'", "[4]", "[3]")
    h.assert_op_error(h.make_op("DropoutGrad", ["dY"], ["dX"]), [np.ones(3)], "mask")


if __name__ == "__main__":
    h.run_main(__file__)
