"""SpatialNarrowAs and its gradient against numpy slicing, both ranks of
B, finite differences, and the error paths."""
import numpy as np
import pytest

import op_harness as h


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 7, 6), (2, 3, 5, 6)),
                                             ((2, 3, 7, 6), (2, 4, 2)),
                                             ((2, 7, 6), (2, 7, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_spatial_narrow_as(a_shape, b_shape, dtype):
    rng = np.random.RandomState(len(b_shape))
    a = (rng.randn(*a_shape) * 10).astype(dtype)
    b = np.zeros(b_shape, np.float32)
    want = a[..., :b_shape[-2], :b_shape[-1]]
    got = h.run_op(h.make_op("SpatialNarrowAs", ["A", "B"], ["C"]), [a, b])[0]
    np.testing.assert_array_equal(got, want)
    if dtype == np.float64:
        dc = rng.randn(*want.shape)
        grad = h.make_op("SpatialNarrowAsGradient", ["A", "B", "dC"], ["dA"])
        da = h.run_op(grad, [a, b, dc])[0]
        expect = np.zeros_like(a)
        expect[..., :b_shape[-2], :b_shape[-1]] = dc
        np.testing.assert_array_equal(da, expect)
        h.check_gradient(h.make_op("SpatialNarrowAs", ["A", "B"], ["C"]), [a, b], [0])


def test_spatial_narrow_as_bad_input():
    op = h.make_op("SpatialNarrowAs", ["A", "B"], ["C"])
    a = np.zeros((2, 3, 4, 4), np.float32)
    h.assert_op_error(op, [a, np.zeros((2, 3, 5, 4))], "larger than A's 4 x 4")
    h.assert_op_error(op, [a, np.zeros((1, 3, 2, 2))], "in N")
    h.assert_op_error(op, [a, np.zeros((2, 2))], "3-D or 4-D")
    grad = h.make_op("SpatialNarrowAsGradient", ["A", "B", "dC"], ["dA"])
    h.assert_op_error(grad, [a, np.zeros((2, 3, 2, 2)), np.zeros((2, 3, 2, 3), np.float32)],
                      "'dC'")


if __name__ == "__main__":
    h.run_main(__file__)
