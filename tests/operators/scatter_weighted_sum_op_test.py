"""ScatterWeightedSum against a numpy loop (repeated indices scale and add
once per occurrence, as Caffe2); it must run in place; bad indices and
slices are errors naming them."""
import numpy as np
from hypothesis import given, settings, strategies as st

import op_harness as h


def numpy_scatter_weighted_sum(x0, w0, indices, *pairs):
    out = x0.astype(np.float64).copy()
    for i in indices:
        out[i] *= w0[0]
    for x, w in zip(pairs[::2], pairs[1::2]):
        for k, i in enumerate(indices):
            out[i] += w[0] * x[k]
    return out.astype(np.float32)


@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2), st.sampled_from([np.int32,
                                                                                  np.int64]))
@settings(max_examples=30, deadline=None)
def test_scatter_weighted_sum_matches_numpy(rows, count, pairs, index_type):
    rng = np.random.RandomState(rows * 7 + count)
    x0 = rng.randn(rows, 3).astype(np.float32)
    indices = rng.randint(0, rows, size=count).astype(index_type)  # repeats included
    inputs = [x0, np.array([rng.choice([1.0, 0.5])], np.float32), indices]
    names = ['X0', 'w0', 'idx']
    for k in range(pairs):
        inputs += [rng.randn(count, 3).astype(np.float32), np.array([rng.randn()], np.float32)]
        names += ['X%d' % (k + 1), 'w%d' % (k + 1)]
    op = h.make_op('ScatterWeightedSum', names, ['X0'])
    h.check_output(op, inputs, numpy_scatter_weighted_sum, atol=1e-5, rtol=1e-5)


def test_scatter_weighted_sum_errors():
    x0 = np.zeros((3, 2), np.float32)
    w = np.array([1.0], np.float32)
    op = h.make_op('ScatterWeightedSum', ['X0', 'w0', 'idx', 'X1', 'w1'], ['X0'])
    h.assert_op_error(op, [x0, w, np.array([3], np.int64), np.zeros((1, 2), np.float32), w],
                      'index 3 at position 0', 'out of range [0, 3)')
    h.assert_op_error(op, [x0, w, np.array([0, 1], np.int64), np.zeros((1, 2), np.float32), w],
                      "slices 'X1'", '2 rows of 2')
    h.assert_op_error(h.make_op('ScatterWeightedSum', ['X0', 'w0', 'idx'], ['Y']),
                      [x0, w, np.array([0], np.int64)], 'in place')


if __name__ == '__main__':
    h.run_main(__file__)
