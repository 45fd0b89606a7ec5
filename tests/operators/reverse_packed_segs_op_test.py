"""ReversePackedSegs against reversing each sequence's prefix in numpy; its
gradient (itself) against finite differences; bad lengths are errors."""
import numpy as np
from hypothesis import given, settings, strategies as st

import op_harness as h


def numpy_reverse(data, lengths):
    out = data.copy()
    for n, length in enumerate(lengths):
        out[:length, n] = data[:length, n][::-1]
    return out


@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 3), st.sampled_from([np.int32,
                                                                                  np.int64]))
@settings(max_examples=25, deadline=None)
def test_reverse_packed_segs_matches_numpy(steps, batch, block, length_type):
    rng = np.random.RandomState(steps * 10 + batch)
    data = rng.randn(steps, batch, block).astype(np.float32)
    lengths = rng.randint(0, steps + 1, size=batch).astype(length_type)
    op = h.make_op('ReversePackedSegs', ['data', 'lengths'], ['out'])
    h.check_output(op, [data, lengths], numpy_reverse)


def test_reverse_packed_segs_gradient_and_errors():
    data = np.random.RandomState(0).randn(4, 2, 3).astype(np.float32)
    lengths = np.array([3, 1], np.int32)
    op = h.make_op('ReversePackedSegs', ['data', 'lengths'], ['out'])
    h.check_gradient(op, [data, lengths], [0])
    h.assert_op_error(op, [data, np.array([5, 1], np.int32)], 'lengths[0] = 5')
    h.assert_op_error(op, [data, np.array([1], np.int32)], "'lengths'", 'one per sequence')
    h.assert_op_error(op, [data[0], lengths], "'data'", '3-D')


if __name__ == '__main__':
    h.run_main(__file__)
