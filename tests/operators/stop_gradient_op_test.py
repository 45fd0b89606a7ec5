"""StopGradient: identity forward, no gradient backward."""
import hypothesis.strategies as st
import numpy as np
from hypothesis import given

import op_harness as h


DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.bool_])
OP = h.make_op("StopGradient", ["X"], ["Y"])


@given(h.dims(0, 4), DTYPES, st.data())
def test_identity(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    h.check_output(OP, [x], lambda x: x)
    assert h.check_inplace(OP, [x]) == 1


@h.requires_cuda
@given(h.dims(0, 4), DTYPES, st.data())
def test_cuda_matches_cpu(shape, dtype, data):
    h.check_device(OP, [data.draw(h.arrays(tuple(shape), dtype))])


def test_blocks_the_gradient():
    ops, grads = h.gradient_ops(h.make_op("StopGradient", ["X"], ["Y"]))
    assert ops == [] and grads == [None]


def test_copy_is_independent_of_the_input():
    # Out of place it copies (as Caffe2): the input is not aliased.
    x = np.arange(3.0)
    y = h.run_op(h.make_op("StopGradient", ["X"], ["Y"]), [x])[0]
    np.testing.assert_array_equal(y, x)


def test_missing_input_names_the_blob():
    h.assert_op_error(h.make_op("StopGradient", ["nope"], ["Y"]), [], "'nope'")


if __name__ == "__main__":
    h.run_main(__file__)
