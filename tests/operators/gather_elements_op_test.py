"""GatherElements and its gradient against numpy's take_along_axis and
add.at, finite differences, and the error paths."""
import numpy as np
import pytest

import op_harness as h

CASES = [((3, 4), (2, 4), 0), ((3, 4), (3, 6), 1), ((2, 3, 4), (2, 5, 4), 1),
         ((2, 3, 4), (1, 2, 7), -1), ((5,), (9,), 0), ((2, 3), (0, 3), 0)]


def _coordinates(data_shape, index_shape, axis, idx):
    """Each output element's coordinates in DATA: its own, with the axis
    one replaced by its (non-negative) index. Not np.take_along_axis, which
    broadcasts INDICES instead of reading DATA's leading corner."""
    coords = list(np.indices(index_shape))
    coords[axis % len(data_shape)] = np.where(idx < 0, idx + data_shape[axis], idx)
    return tuple(coords)


def _indices(rng, data_shape, index_shape, axis, dtype):
    size = data_shape[axis]
    return rng.randint(-size, size, index_shape).astype(dtype)


@pytest.mark.parametrize("data_shape,index_shape,axis", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_elements_matches_numpy(data_shape, index_shape, axis, dtype, index_dtype):
    rng = np.random.RandomState(len(data_shape) + axis)
    data = (rng.randn(*data_shape) * 10).astype(dtype)
    idx = _indices(rng, data_shape, index_shape, axis, index_dtype)
    want = data[_coordinates(data_shape, index_shape, axis, idx)]
    op = h.make_op("GatherElements", ["D", "I"], ["O"], axis=axis)
    got = h.run_op(op, [data, idx])[0]
    assert got.dtype == data.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("data_shape,index_shape,axis", CASES[:5])
def test_gather_elements_gradient(data_shape, index_shape, axis):
    rng = np.random.RandomState(7)
    data = rng.randn(*data_shape)
    idx = _indices(rng, data_shape, index_shape, axis, np.int64)
    dout = rng.randn(*index_shape)
    want = np.zeros_like(data)
    np.add.at(want, _coordinates(data_shape, index_shape, axis, idx), dout)
    grad = h.make_op("GatherElementsGradient", ["D", "I", "dO"], ["dD"], axis=axis)
    np.testing.assert_allclose(h.run_op(grad, [data, idx, dout])[0], want, rtol=1e-12)
    op = h.make_op("GatherElements", ["D", "I"], ["O"], axis=axis)
    h.check_gradient(op, [data, idx], [0])
    grad_ops, input_grads = h.gradient_ops(op)
    assert grad_ops[0].type == "GatherElementsGradient" and input_grads == ["D_grad", None]


def test_gather_elements_bad_input():
    data = np.zeros((3, 4), np.float32)
    op = h.make_op("GatherElements", ["D", "I"], ["O"], axis=1)
    h.assert_op_error(op, [data, np.array([[4]], np.int64)], "index 4", "[-4, 4)")
    h.assert_op_error(op, [data, np.array([[-5]], np.int32)], "index -5")
    h.assert_op_error(op, [data, np.zeros((3,), np.int64)], "'I'", "DATA's rank")
    h.assert_op_error(op, [data, np.zeros((4, 1), np.int64)], "'I'", "larger than DATA")
    h.assert_op_error(op, [data, np.zeros((3, 1), np.float32)], "'I'", "float32")
    bad_axis = h.make_op("GatherElements", ["D", "I"], ["O"], axis=2)
    h.assert_op_error(bad_axis, [data, np.zeros((3, 1), np.int64)], "axis 2")
    grad = h.make_op("GatherElementsGradient", ["D", "I", "dO"], ["dD"], axis=1)
    h.assert_op_error(grad, [data, np.zeros((3, 1), np.int64), np.zeros((3, 2), np.float32)],
                      "'dO'")


if __name__ == "__main__":
    h.run_main(__file__)
