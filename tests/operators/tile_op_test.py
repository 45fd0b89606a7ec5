"""Tile against np.repeat-of-slabs (numpy's tile along one axis), with tiles
and axis as arguments or inputs; its gradient against finite differences;
missing and malformed parameters are errors naming them."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import op_harness as h


def numpy_tile(x, tiles, axis):
    reps = [1] * x.ndim
    reps[axis] = tiles
    # Caffe2's Tile repeats the whole slab from `axis` on: np.tile of the
    # tensor reshaped so that dims before axis are kept apart.
    outer = x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])
    tiled = np.tile(outer, [1] * axis + [tiles] + [1] * (x.ndim - axis))
    shape = list(x.shape)
    shape[axis] *= tiles
    return tiled.reshape(shape)


@given(h.dims(1, 3), st.integers(0, 3), st.data())
@settings(max_examples=25, deadline=None)
def test_tile_matches_numpy(shape, tiles, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.RandomState(tiles).randn(*shape).astype(np.float32)
    op = h.make_op('Tile', ['X'], ['Y'], tiles=tiles, axis=axis)
    h.check_output(op, [x], lambda x: numpy_tile(x, tiles, axis % len(shape)))


def test_tile_parameters_as_inputs_override_arguments():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    op = h.make_op('Tile', ['X', 'tiles', 'axis'], ['Y'], tiles=9, axis=0)
    h.check_output(op, [x, np.array([2], np.int32), np.array([1], np.int64)],
                   lambda *_: numpy_tile(x, 2, 1))


@pytest.mark.parametrize('axis', [0, 1, 2])
def test_tile_gradient(axis):
    x = np.random.RandomState(axis).randn(2, 3, 2)
    op = h.make_op('Tile', ['X'], ['Y'], tiles=3, axis=axis)
    h.check_gradient(op, [x.astype(np.float32)], [0])


def test_tile_errors():
    x = np.zeros((2, 2), np.float32)
    h.assert_op_error(h.make_op('Tile', ['X'], ['Y'], tiles=2), [x], '`axis` is missing')
    h.assert_op_error(h.make_op('Tile', ['X', 't'], ['Y'], axis=0),
                      [x, np.array([[2]], np.int32)], "'t'", 'vector of one integer')
    h.assert_op_error(h.make_op('Tile', ['X'], ['Y'], tiles=-1, axis=0), [x],
                      'must not be negative')


if __name__ == '__main__':
    h.run_main(__file__)
