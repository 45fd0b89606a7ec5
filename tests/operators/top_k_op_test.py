"""TopK against a stable numpy argsort (largest first, ties by lower index),
along any axis, with flattened indices; its gradient against finite
differences; bad k is an error."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import op_harness as h


def numpy_top_k(x, k, axis):
    moved = np.moveaxis(x, axis, -1)
    order = np.argsort(-moved, axis=-1, kind='stable')[..., :k]
    values = np.take_along_axis(moved, order, axis=-1)
    indices = np.moveaxis(order, -1, axis).astype(np.int64)
    flat = np.ravel_multi_index(
        tuple(np.indices(indices.shape)[d] if d != axis else indices
              for d in range(x.ndim)), x.shape).reshape(-1)
    return np.moveaxis(values, -1, axis), indices, flat


@given(h.dims(1, 3), st.data())
@settings(max_examples=30, deadline=None)
def test_top_k_matches_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    k = data.draw(st.integers(1, shape[axis]))
    rng = np.random.RandomState(k)
    # Few distinct values: ties must keep the lower index first.
    x = rng.randint(0, 3, size=shape).astype(np.float32)
    op = h.make_op('TopK', ['X'], ['V', 'I', 'F'], k=k, axis=axis)
    h.check_output(op, [x], lambda x: numpy_top_k(x, k, axis % len(shape)))


def test_top_k_puts_nan_first_and_handles_int():
    x = np.array([[1.0, np.nan, 3.0, -1.0]], np.float32)
    values, indices = h.run_op(h.make_op('TopK', ['X'], ['V', 'I'], k=2), [x])
    assert np.isnan(values[0, 0]) and values[0, 1] == 3.0
    np.testing.assert_array_equal(indices, [[1, 2]])
    xi = np.array([5, 9, 9, 1], np.int32)
    h.check_output(h.make_op('TopK', ['X'], ['V', 'I'], k=3), [xi],
                   lambda x: numpy_top_k(x, 3, 0)[:2])


@pytest.mark.parametrize('axis', [0, -1])
def test_top_k_gradient(axis):
    x = np.random.RandomState(3).permutation(12).reshape(3, 4).astype(np.float32)
    op = h.make_op('TopK', ['X'], ['V', 'I'], k=2, axis=axis)
    h.check_gradient(op, [x], [0], outputs_with_grad=[0])


def test_top_k_errors():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(h.make_op('TopK', ['X'], ['V', 'I'], k=4), [x], 'greater than the axis dim')
    h.assert_op_error(h.make_op('TopK', ['X'], ['V', 'I']), [x], 'k must be at least 1')


if __name__ == '__main__':
    h.run_main(__file__)
