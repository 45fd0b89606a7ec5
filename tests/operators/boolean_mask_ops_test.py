"""BooleanMask against numpy's data[mask] (numbers, strings, indices) and
SequenceMask's modes against numpy masks (sequence, window, triangular,
batch, repeat_from_axis), its gradient (the grad-mode op) against finite
differences, and errors."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import op_harness as h


@given(h.dims(1, 4), st.data(), st.booleans())
@settings(max_examples=30, deadline=None)
def test_boolean_mask_matches_numpy(shape, data, with_indices):
    x = data.draw(h.arrays(tuple(shape), np.float32))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0])))
    outputs = ['y', 'i'] if with_indices else ['y']
    op = h.make_op('BooleanMask', ['x', 'mask'], outputs)
    expected = [x[mask]] + ([np.where(mask)[0].astype(np.int64)] if with_indices else [])
    h.check_output(op, [x, mask], lambda x, m: expected)


def test_boolean_mask_strings_and_errors():
    x = np.array([b'a', b'b', b'c'], dtype=object)
    op = h.make_op('BooleanMask', ['x', 'mask'], ['y'])
    got = h.run_op(op, [x, np.array([True, False, True])])[0]
    assert list(got) == [b'a', b'c']
    h.assert_op_error(op, [x, np.array([True, False])], "mask", "bool [3]")


def reference_mask(x, mode, axis, lengths=None, radius=10, batch=None, repeat_from=None,
                   fill=-np.inf):
    shape = x.shape
    if batch is not None:
        b = int(np.prod(shape[:batch + 1]))
        rows = int(np.prod(shape[batch + 1:axis]))
    else:
        b, rows = 1, int(np.prod(shape[:axis]))
    cols = int(np.prod(shape[axis:]))
    repeat = int(np.prod(shape[repeat_from:])) if repeat_from is not None else 1
    view = x.reshape(b, rows, cols // repeat, repeat).copy()
    r = np.arange(rows)[:, None]
    c = np.arange(cols // repeat)[None, :]
    masked = {
        'sequence': lambda: c >= np.asarray(lengths)[:rows, None],
        'window': lambda: (c > np.asarray(lengths)[:, None] + radius) |
                          (c < np.asarray(lengths)[:, None] - radius),
        'upper': lambda: c > r, 'lower': lambda: c < r,
        'upperdiag': lambda: c >= r, 'lowerdiag': lambda: c <= r,
    }[mode]()
    view[:, np.broadcast_to(masked, (rows, cols // repeat)), :] = fill
    return view.reshape(shape)


@pytest.mark.parametrize('mode', ['sequence', 'window', 'upper', 'lower', 'upperdiag',
                                  'lowerdiag'])
def test_sequence_mask_modes_match_numpy(mode):
    rng = np.random.RandomState(0)
    x = rng.randn(3, 4).astype(np.float32)
    args = dict(mode=mode, axis=1)
    inputs, names, lengths = [x], ['x'], None
    if mode in ('sequence', 'window'):
        lengths = np.array([1, 4, 2], np.int32)
        inputs.append(lengths)
        names.append('lengths')
        args['radius'] = 1
    op = h.make_op('SequenceMask', names, ['y'], **args)
    h.check_output(op, inputs, lambda *a: reference_mask(x, mode, 1, lengths, radius=1))


def test_sequence_mask_batch_repeat_fill_and_gradient():
    rng = np.random.RandomState(1)
    x = rng.randn(2, 3, 4).astype(np.float32)
    op = h.make_op('SequenceMask', ['x'], ['y'], mode='upper', axis=2, batch=0, fill_val=-5.0)
    h.check_output(op, [x], lambda x: reference_mask(x, 'upper', 2, batch=0, fill=-5.0))
    lengths = np.array([1, 3], np.int32)
    op = h.make_op('SequenceMask', ['x', 'lengths'], ['y'], mode='sequence', axis=1,
                   repeat_from_axis=2)
    h.check_output(op, [x, lengths],
                   lambda x, l: reference_mask(x, 'sequence', 1, l, repeat_from=2))
    op = h.make_op('SequenceMask', ['x', 'lengths'], ['y'], mode='sequence', axis=1,
                   fill_val=0.0)
    h.check_gradient(op, [x.astype(np.float32), lengths], [0])


def test_sequence_mask_errors():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(h.make_op('SequenceMask', ['x'], ['y'], mode='diagonal'), [x],
                      "'mode'")
    op = h.make_op('SequenceMask', ['x', 'lengths'], ['y'], mode='sequence')
    h.assert_op_error(op, [x, np.array([1], np.int32)], 'row 1', "'lengths'")


if __name__ == '__main__':
    h.run_main(__file__)
