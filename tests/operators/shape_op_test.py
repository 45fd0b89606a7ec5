"""Shape against numpy's .shape."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


@given(h.dims(0, 5, 0, 4), st.data())
def test_shape(shape, data):
    x = np.zeros(shape, np.float32)
    op = h.make_op("Shape", ["X"], ["S"])
    h.check_output(op, [x], lambda x: np.array(x.shape, np.int64), output_dtypes=[np.int64])
    if shape:
        axes = data.draw(st.lists(st.integers(0, len(shape) - 1), max_size=4))
        if axes:
            op = h.make_op("Shape", ["X"], ["S"], axes=axes)
            h.check_output(op, [x], lambda x: np.array([x.shape[a] for a in axes], np.int64))


@h.requires_cuda
@given(h.dims(0, 5, 0, 4))
def test_shape_cuda_matches_cpu(shape):
    h.check_device(h.make_op("Shape", ["X"], ["S"]), [np.zeros(shape, np.float32)])


def test_strings_and_no_gradient():
    s = np.array(["a", "b"], dtype=object)
    np.testing.assert_array_equal(h.run_op(h.make_op("Shape", ["S"], ["T"]), [s])[0], [2])
    ops, grads = h.gradient_ops(h.make_op("Shape", ["X"], ["S"]))
    assert ops == [] and grads == [None]


def test_bad_axes():
    h.assert_op_error(h.make_op("Shape", ["X"], ["S"], axes=[2]), [np.zeros((2, 3))],
                      "axis 2", "[2, 3]")
    h.assert_op_error(h.make_op("Shape", ["X"], ["S"], axes=[-1]), [np.zeros((2, 3))],
                      "axis -1")


if __name__ == "__main__":
    h.run_main(__file__)
