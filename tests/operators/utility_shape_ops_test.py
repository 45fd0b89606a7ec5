"""Size, Range, LengthsToShape, LengthsGather and NanCheck against numpy, and
their errors."""
import numpy as np
import pytest

import op_harness as h


def test_size_counts_elements():
    op = h.make_op('Size', ['X'], ['n'])
    for shape in [(), (0,), (2, 3, 4)]:
        out = h.run_op(op, [np.zeros(shape, np.float32)])[0]
        assert out.dtype == np.int64 and out.shape == () and out == int(np.prod(shape))


@pytest.mark.parametrize('args,dtype', [((5,), np.int32), ((2, 9, 3), np.int64),
                                        ((1.0, 2.0, 0.25), np.float32),
                                        ((3, -4, -2), np.int32), ((4, 2), np.float64)])
def test_range_matches_arange(args, dtype):
    names = ['a', 'b', 'c'][:len(args)]
    op = h.make_op('Range', names, ['y'])
    inputs = [np.array(a, dtype=dtype) for a in args]
    h.check_output(op, inputs, lambda *a: np.arange(*[x.item() for x in a]).astype(dtype))


def test_range_errors():
    op = h.make_op('Range', ['a', 'b', 'c'], ['y'])
    h.assert_op_error(op, [np.array(0, np.int32), np.array(5, np.int32),
                           np.array(0, np.int32)], 'Step size cannot be 0')
    h.assert_op_error(op, [np.array(0, np.int32), np.array(5, np.int64),
                           np.array(1, np.int32)], 'one type')


def test_lengths_to_shape_and_lengths_gather():
    op = h.make_op('LengthsToShape', ['l'], ['s'])
    h.check_output(op, [np.array([3, 3, 3], np.int32)], lambda l: np.array([3, 3], np.int32))
    h.assert_op_error(op, [np.array([3, 2], np.int32)], 'equal')
    items = np.arange(12, dtype=np.float32).reshape(6, 2)
    lengths = np.array([2, 0, 3, 1], np.int32)
    indices = np.array([2, 0, 2, 3], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])

    def reference(items, lengths, indices):
        return np.concatenate([items[starts[i]:starts[i] + lengths[i]] for i in indices])

    op = h.make_op('LengthsGather', ['items', 'lengths', 'indices'], ['y'])
    h.check_output(op, [items, lengths, indices], reference)
    h.assert_op_error(op, [items, lengths, np.array([4], np.int32)], 'index 4', 'out of range')
    h.assert_op_error(op, [items, np.array([1, 1], np.int32), indices], 'sum to the rows')


def test_nan_check_passes_finite_values_and_names_the_first_bad_one():
    op = h.make_op('NanCheck', ['X'], ['Y'])
    x = np.array([1.0, -2.5, 3.0], np.float32)
    h.check_output(op, [x], lambda x: x)
    h.check_gradient(op, [x.astype(np.float64)], [0])
    h.assert_op_error(op, [np.array([1.0, np.nan], np.float32)], "'X'", 'element 1')
    h.assert_op_error(op, [np.array([np.inf], np.float64)], 'inf')


if __name__ == '__main__':
    h.run_main(__file__)
