"""NCHW2NHWC and NHWC2NCHW against numpy."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h


@given(h.dims(3, 5, 1, 4), h.float_dtypes, st.data())
def test_nchw_to_nhwc_and_back(shape, dtype, data):
    x = data.draw(h.arrays(tuple(shape), dtype))
    ndim = len(shape)
    to_nhwc = h.make_op("NCHW2NHWC", ["X"], ["Y"])
    nhwc = h.check_output(to_nhwc, [x], lambda x: np.moveaxis(x, 1, -1))[0]
    to_nchw = h.make_op("NHWC2NCHW", ["Y"], ["Z"])
    h.check_output(to_nchw, [nhwc], lambda y: np.moveaxis(y, -1, 1))
    if dtype == np.float64:
        h.check_gradient(to_nhwc, [x], [0])
        h.check_gradient(to_nchw, [nhwc], [0])
    assert nhwc.shape == (shape[0],) + tuple(shape[2:]) + (shape[1],)
    assert ndim >= 3


@pytest.mark.parametrize("shape", [(8, 116, 28, 28), (2, 3, 50, 50), (1, 96, 7, 9, 11)])
def test_large_float_tensors_switch_exactly(shape):
    """What transforms/channels_last puts at region borders: oneDNN
    reorders for float32 of >= 4,096 elements, bit for bit numpy's."""
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    nhwc = h.run_op(h.make_op("NCHW2NHWC", ["X"], ["Y"]), [x])[0]
    np.testing.assert_array_equal(nhwc, np.moveaxis(x, 1, -1))
    back = h.run_op(h.make_op("NHWC2NCHW", ["Y"], ["Z"]), [nhwc])[0]
    np.testing.assert_array_equal(back, x)


@h.requires_cuda
@given(h.dims(3, 5, 1, 4), h.float_dtypes, st.data())
def test_nchw_to_nhwc_cuda_matches_cpu(shape, dtype, data):
    h.check_device(h.make_op("NCHW2NHWC", ["X"], ["Y"]), [data.draw(h.arrays(tuple(shape), dtype))])


def test_gradients_are_each_other():
    ops, _ = h.gradient_ops(h.make_op("NCHW2NHWC", ["X"], ["Y"]))
    assert ops[0].type == "NHWC2NCHW"
    ops, _ = h.gradient_ops(h.make_op("NHWC2NCHW", ["X"], ["Y"]))
    assert ops[0].type == "NCHW2NHWC"


def test_rank_below_three_is_an_error():
    for name in ["NCHW2NHWC", "NHWC2NCHW"]:
        h.assert_op_error(h.make_op(name, ["X"], ["Y"]), [np.zeros((2, 3), np.float32)],
                          "'X'", "rank >= 3", "[2, 3]")


if __name__ == "__main__":
    h.run_main(__file__)
