"""WeightedSum and WeightedSumGradient against numpy."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


def interleave(xs, ws):
    return [v for pair in zip(xs, ws) for v in pair]


def _weighted_sum_case(count, shape, dtype, float32_weights, data):
    """(the WeightedSum op, its inputs X0, w0, X1, w1, ...)."""
    xs = [data.draw(h.arrays(tuple(shape), dtype)) for _ in range(count)]
    weight_type = np.float32 if float32_weights else dtype
    ws = [np.array([data.draw(st.floats(-2, 2, width=32))], weight_type) for _ in range(count)]
    names = interleave(["X%d" % i for i in range(count)], ["w%d" % i for i in range(count)])
    return h.make_op("WeightedSum", names, ["Y"]), interleave(xs, ws)


@given(st.integers(1, 4), h.dims(0, 3), h.float_dtypes, st.booleans(), st.data())
def test_forward_matches_numpy(count, shape, dtype, float32_weights, data):
    op, inputs = _weighted_sum_case(count, shape, dtype, float32_weights, data)

    def reference(*inputs):
        total = np.zeros(shape, np.float64)
        for x, w in zip(inputs[0::2], inputs[1::2]):
            total += w.astype(np.float64)[0] * x
        return total.astype(dtype)

    h.check_output(op, inputs, reference, atol=1e-5 if dtype == np.float32 else None)
    h.check_inplace(op, inputs, atol=1e-6)


@h.requires_cuda
@given(st.integers(1, 4), h.dims(0, 3), h.float_dtypes, st.booleans(), st.data())
def test_forward_cuda_matches_cpu(count, shape, dtype, float32_weights, data):
    h.check_device(*_weighted_sum_case(count, shape, dtype, float32_weights, data))


@given(st.integers(1, 3), h.dims(0, 3), st.booleans(), st.data())
def test_gradient_matches_finite_differences(count, shape, grad_on_w, data):
    xs = [data.draw(h.arrays(tuple(shape), np.float64)) for _ in range(count)]
    ws = [np.array([data.draw(st.floats(-2, 2))]) for _ in range(count)]
    names = interleave(["X%d" % i for i in range(count)], ["w%d" % i for i in range(count)])
    op = h.make_op("WeightedSum", names, ["Y"], grad_on_w=int(grad_on_w))
    checked = list(range(0, 2 * count, 2)) + (list(range(1, 2 * count, 2)) if grad_on_w else [])
    h.check_gradient(op, interleave(xs, ws), checked)


def test_gradient_op_layout_and_in_place():
    ops, grads = h.gradient_ops(h.make_op("WeightedSum", ["A", "a", "B", "b"], ["Y"],
                                          grad_on_w=1))
    assert ops[0].type == "WeightedSumGradient"
    assert list(ops[0].input) == ["Y_grad", "A", "a", "B", "b"]
    assert list(ops[0].output) == ["A_grad", "B_grad", "a_grad", "b_grad"]
    assert grads == ["A_grad", "a_grad", "B_grad", "b_grad"]
    rng = np.random.RandomState(0)
    inputs = [rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, (2, 3)), np.array([0.5]),
              rng.uniform(-1, 1, (2, 3)), np.array([-2.0])]
    op = h.make_op("WeightedSumGradient", ["dY", "A", "a", "B", "b"], ["dA", "dB"])
    dy = inputs[0]
    h.check_output(op, inputs, lambda *_: [0.5 * dy, -2.0 * dy])
    assert h.check_inplace(op, inputs) == 1


def test_bad_inputs():
    x = np.zeros((2, 3), np.float32)
    w = np.ones(1, np.float32)
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a", "B", "b"], ["Y"]),
                      [x, w, np.zeros((3, 2), np.float32), w], "'B'", "[3, 2]", "[2, 3]")
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a"], ["Y"]),
                      [x, np.ones(2, np.float32)], "'a'", "one element")
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a"], ["Y"]),
                      [x, np.ones(1, np.int32)], "'a'", "int32")
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a"], ["Y"]),
                      [np.zeros(3, np.int32), w], "'A'", "int32")
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a", "B"], ["Y"]), [x, w, x],
                      "3 inputs")
    h.assert_op_error(h.make_op("WeightedSum", ["A", "a", "B", "b"], ["B"]), [x, w, x, w],
                      "in place")


if __name__ == "__main__":
    h.run_main(__file__)
