"""Neg (and Negative), Exp, Log, Sqrt, Sqr, Abs and Clip (and their gradients) against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h
from doppio import _C

# name -> (numpy reference, elements for a well-behaved input)
UNARY = {
    "Neg": (np.negative, st.floats(-3, 3, width=32)),
    "Negative": (np.negative, st.floats(-3, 3, width=32)),  # Caffe2's name for Neg
    "Exp": (np.exp, st.floats(-3, 3, width=32)),
    "Log": (np.log, st.floats(0.125, 5, width=32)),
    "Sqrt": (np.sqrt, st.floats(0.125, 5, width=32)),
    "Sqr": (np.square, st.floats(-3, 3, width=32)),
    # Kept off the kink at 0 so finite differences stay on one side.
    "Abs": (np.abs, st.one_of(st.floats(-3, -0.0625, width=32), st.floats(0.0625, 3, width=32))),
}
names = st.sampled_from(sorted(UNARY))


def run_ops(ops, feeds, fetch):
    """Runs `ops` in order in a fresh workspace fed with `feeds`; returns blob
    `fetch`."""
    with h._FreshWorkspace():
        for name, value in feeds.items():
            _C.feed_blob(name, value)
        for op in ops:
            _C.run_operator_once(op.SerializeToString())
        return _C.fetch_blob(fetch)


@given(names, h.dims(0, 4), h.float_dtypes, st.data())
def test_forward_matches_numpy(name, shape, dtype, data):
    reference, elements = UNARY[name]
    x = data.draw(h.arrays(tuple(shape), dtype, elements=elements))
    op = h.make_op(name, ["X"], ["Y"])
    h.check_output(op, [x], lambda x: reference(x).astype(dtype))
    h.check_inplace(op, [x])


@h.requires_cuda
@given(names, h.dims(0, 4), h.float_dtypes, st.data())
def test_forward_cuda_matches_cpu(name, shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype, elements=UNARY[name][1]))
    h.check_device(h.make_op(name, ["X"], ["Y"]), [x])


@given(names, h.dims(0, 3), st.data())
def test_gradient_matches_finite_differences(name, shape, data):
    x = data.draw(h.arrays(tuple(shape), np.float64, elements=UNARY[name][1]))
    h.check_gradient(h.make_op(name, ["X"], ["Y"]), [x], [0])


@given(st.sampled_from(["Neg", "Abs"]), h.dims(0, 3), st.sampled_from([np.int32, np.int64]),
       st.data())
def test_integer_neg_and_abs(name, shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    h.check_output(h.make_op(name, ["X"], ["Y"]), [x], lambda x: UNARY[name][0](x))


def test_special_values_follow_numpy():
    x = np.array([-1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 2.0], np.float32)
    for name in ["Log", "Sqrt", "Exp", "Abs", "Neg"]:
        got = h.run_op(h.make_op(name, ["X"], ["Y"]), [x])[0]
        with np.errstate(all="ignore"):
            expected = UNARY[name][0](x)
        # nan where numpy has nan (log(-1)), inf where it has inf.
        np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=name)
    lowest = np.array([np.iinfo(np.int32).min], np.int32)
    for name in ["Neg", "Abs"]:
        got = h.run_op(h.make_op(name, ["X"], ["Y"]), [lowest])[0]
        np.testing.assert_array_equal(got, lowest, err_msg=name)  # wraps like numpy


@given(h.dims(0, 4), h.float_dtypes, st.floats(-1, 0), st.floats(0.01, 1), st.data())
def test_clip(shape, dtype, low, width, data):
    low = float(np.float32(low))
    high = float(np.float32(low + width))
    x = data.draw(h.arrays(tuple(shape), dtype, elements=st.floats(-2, 2, width=32)))
    op = h.make_op("Clip", ["X"], ["Y"], min=low, max=high)
    h.check_output(op, [x], lambda x: np.clip(x, low, high).astype(dtype))
    h.check_inplace(op, [x])
    # Off the bounds, where the derivative jumps.
    x64 = x.astype(np.float64)
    x64 = np.where(np.abs(x64 - low) < 1e-3, x64 - 2e-3, x64)
    x64 = np.where(np.abs(x64 - high) < 1e-3, x64 + 2e-3, x64)
    h.check_gradient(op, [x64], [0])


def test_clip_defaults_and_one_bound():
    x = np.array([-1e30, -1.0, 0.5, 1e30], np.float32)
    h.check_output(h.make_op("Clip", ["X"], ["Y"]), [x], lambda x: x)
    h.check_output(h.make_op("Clip", ["X"], ["Y"], min=0.0), [x], lambda x: np.maximum(x, 0))
    h.check_output(h.make_op("Clip", ["X"], ["Y"], max=0.0), [x], lambda x: np.minimum(x, 0))


def test_clip_gradient_op_in_place_over_dy():
    y = np.array([0.0, 0.5, 1.0, 0.2])
    dy = np.array([1.0, 2.0, 3.0, 4.0])
    op = h.make_op("ClipGradient", ["Y", "dY"], ["dX"], min=0.0, max=1.0)
    h.check_output(op, [y, dy], lambda y, dy: np.array([0.0, 2.0, 0.0, 4.0]))
    assert h.check_inplace(op, [y, dy]) == 1


def test_gradient_makers():
    ops, _ = h.gradient_ops(h.make_op("Exp", ["X"], ["Y"]))
    assert [(op.type, list(op.input)) for op in ops] == [("Mul", ["Y", "Y_grad"])]
    ops, _ = h.gradient_ops(h.make_op("Sqrt", ["X"], ["Y"]))
    assert [op.type for op in ops] == ["Scale", "Div"]
    ops, _ = h.gradient_ops(h.make_op("Abs", ["X"], ["Y"]))
    assert [(op.type, list(op.input)) for op in ops] == [("AbsGradient", ["X", "Y_grad"])]
    ops, _ = h.gradient_ops(h.make_op("Clip", ["X"], ["Y"], min=0.0))
    assert ops[0].type == "ClipGradient" and ops[0].arg[0].name == "min"
    with pytest.raises(RuntimeError, match="Log.*in place"):
        h.gradient_ops(h.make_op("Log", ["X"], ["X"]))


def test_in_place_exp_and_sqrt_gradients_use_the_output():
    # Their gradients read only Y, so they stay right when Y overwrote X.
    # In place, the output's gradient and the input's share the name X_grad.
    x = np.array([0.5, 1.0, 2.0])
    for name, derivative in [("Exp", np.exp), ("Sqrt", lambda x: 0.5 / np.sqrt(x))]:
        op = h.make_op(name, ["X"], ["X"])
        grad_ops, grads = h.gradient_ops(op)
        net = [op] + grad_ops
        got = run_ops(net, {"X": x, "X_grad": np.ones(3)}, grads[0])
        np.testing.assert_allclose(got, derivative(x), err_msg=name)


def test_bad_inputs():
    h.assert_op_error(h.make_op("Exp", ["X"], ["Y"]), [np.zeros(3, np.int32)], "'X'", "int32")
    h.assert_op_error(h.make_op("Sqrt", ["X"], ["Y"]), [np.zeros(3, bool)], "'X'", "bool")
    h.assert_op_error(h.make_op("Clip", ["X"], ["Y"], min=1.0, max=0.0),
                      [np.zeros(3, np.float32)], "'min'", "'max'")
    h.assert_op_error(h.make_op("AbsGradient", ["X", "dY"], ["dX"]),
                      [np.zeros(3), np.zeros(4)], "'dY'", "[4]", "[3]")
    h.assert_op_error(h.make_op("Abs", ["X"], ["X"]), [np.zeros(3)], "in place")


if __name__ == "__main__":
    h.run_main(__file__)
