"""Transpose against numpy.transpose."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


@given(h.dims(0, 5, 1, 4), st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
       st.booleans(), st.data())
def test_matches_numpy(shape, dtype, explicit, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    if explicit:
        axes = data.draw(st.permutations(range(len(shape))))
        op = h.make_op("Transpose", ["X"], ["Y"], axes=list(axes))
        reference = lambda x: np.transpose(x, axes)
    else:
        op = h.make_op("Transpose", ["X"], ["Y"])
        reference = np.transpose  # reverses the dims
    h.check_output(op, [x], reference)
    h.check_device(op, [x])
    if dtype == np.float64:
        h.check_gradient(op, [x], [0])


def test_strings_and_gradient_axes():
    s = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    y = h.run_op(h.make_op("Transpose", ["S"], ["T"]), [s])[0]
    assert y.shape == (3, 2) and y[2, 1] == b"f"
    ops, _ = h.gradient_ops(h.make_op("Transpose", ["X"], ["Y"], axes=[1, 2, 0]))
    assert ops[0].type == "Transpose"
    assert list(ops[0].arg[0].ints) == [2, 0, 1]  # the inverse permutation


def test_bad_axes():
    x = np.zeros((2, 3, 4), np.float32)
    op = lambda axes: h.make_op("Transpose", ["X"], ["Y"], axes=axes)
    h.assert_op_error(op([0, 1]), [x], "'axes'", "[2, 3, 4]")
    h.assert_op_error(op([0, 1, 1]), [x], "not a permutation")
    h.assert_op_error(op([0, 1, 3]), [x], "not a permutation")
    h.assert_op_error(op([0, -1, 1]), [x], "not a permutation")


if __name__ == "__main__":
    h.run_main(__file__)
