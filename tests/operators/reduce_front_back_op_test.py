"""ReduceFront/Back Sum, Mean, Max against numpy (with and without
lengths, every num_reduce_dim), their gradients against finite differences
(Sum, Mean) and a numpy rule (Max), the shape-input form of the gradient,
and errors."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

import op_harness as h

REDUCERS = {'Sum': np.sum, 'Mean': np.mean, 'Max': np.max}


def as_matrix(x, k, front):
    """(the [reduced, kept] view of x, the output dims)."""
    split = k if front else x.ndim - k
    lead, trail = x.shape[:split], x.shape[split:]
    if front:
        return x.reshape(int(np.prod(lead)), int(np.prod(trail))), trail
    return x.reshape(int(np.prod(lead)), int(np.prod(trail))).T, lead


def reference(x, k, front, kind, lengths=None):
    m, out_dims = as_matrix(x, k, front)
    n = m.shape[1]
    lengths = [m.shape[0]] * n if lengths is None else lengths
    y = np.array([REDUCERS[kind](m[:lengths[j], j]) if lengths[j] else 0.0 for j in range(n)],
                 np.float32)
    return y.reshape(out_dims)


def op_name(front, kind):
    return 'Reduce{}{}'.format('Front' if front else 'Back', kind)


@given(h.dims(1, 4), st.data(), st.booleans(), st.sampled_from(sorted(REDUCERS)),
       st.booleans())
def test_matches_numpy(shape, data, front, kind, with_lengths):
    x = data.draw(h.arrays(tuple(shape), np.float32))
    k = data.draw(st.integers(0, len(shape)))
    op_inputs = ['X']
    inputs = [x]
    lengths = None
    m, _ = as_matrix(x, k, front)
    if with_lengths:
        lowest = 0 if kind == 'Sum' else 1
        lengths = np.array(data.draw(st.lists(st.integers(lowest, m.shape[0]),
                                              min_size=m.shape[1], max_size=m.shape[1])),
                           np.int32)
        op_inputs.append('L')
        inputs.append(lengths)
    op = h.make_op(op_name(front, kind), op_inputs, ['Y'], num_reduce_dim=k)
    h.check_output(op, inputs, lambda *a: reference(x, k, front, kind, lengths),
                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('front', [True, False])
@pytest.mark.parametrize('kind', ['Sum', 'Mean'])
def test_sum_and_mean_gradients(front, kind):
    x = np.random.RandomState(0).randn(3, 4, 2).astype(np.float32)
    h.check_gradient(h.make_op(op_name(front, kind), ['X'], ['Y'], num_reduce_dim=2), [x], [0])
    k = 2
    m, _ = as_matrix(x, k, front)
    lengths = np.arange(1, m.shape[1] + 1, dtype=np.int32) % m.shape[0] + 1
    h.check_gradient(h.make_op(op_name(front, kind), ['X', 'L'], ['Y'], num_reduce_dim=k),
                     [x, lengths], [0])


@pytest.mark.parametrize('front', [True, False])
def test_max_gradient_goes_to_the_max(front):
    x = np.random.RandomState(1).randn(4, 3).astype(np.float32)
    dy = np.random.RandomState(2).randn(3 if front else 4).astype(np.float32)
    y = reference(x, 1, front, 'Max')
    op = h.make_op(op_name(front, 'Max') + 'Gradient', ['dY', 'X', 'Y'], ['dX'],
                   num_reduce_dim=1)
    m, _ = as_matrix(x, 1, front)
    want = np.where(m == m.max(axis=0), dy[None, :], 0.0)
    want = want if front else want.T
    h.check_output(op, [dy, x, y], lambda *a: want.astype(np.float32))
    ops, _ = h.gradient_ops(h.make_op(op_name(front, 'Max'), ['X'], ['Y'], num_reduce_dim=1))
    assert [list(o.input) for o in ops] == [['Y_grad', 'X', 'Y']]


def test_gradient_takes_the_shape_instead_of_x():
    x = np.random.RandomState(3).randn(2, 3, 4).astype(np.float32)
    dy = np.random.RandomState(4).randn(4).astype(np.float32)
    for name in ('ReduceFrontSumGradient', 'ReduceFrontMeanGradient'):
        with_x = h.run_op(h.make_op(name, ['dY', 'X'], ['dX'], num_reduce_dim=2), [dy, x])[0]
        shape = np.array(x.shape, np.int64)
        with_shape = h.run_op(h.make_op(name, ['dY', 'S'], ['dX'], num_reduce_dim=2),
                              [dy, shape])[0]
        np.testing.assert_array_equal(with_x, with_shape)
    np.testing.assert_array_equal(with_x, np.broadcast_to(dy / 6, x.shape))


def test_errors():
    x = np.zeros((2, 3), np.float32)
    h.assert_op_error(h.make_op('ReduceFrontSum', ['X'], ['Y'], num_reduce_dim=3), [x],
                      'num_reduce_dim')
    h.assert_op_error(h.make_op('ReduceBackSum', ['X', 'L'], ['Y']),
                      [x, np.array([1], np.int32)], "'L'", '1 lengths')
    h.assert_op_error(h.make_op('ReduceBackMean', ['X', 'L'], ['Y']),
                      [x, np.array([0, 1], np.int32)], "'L'")
    h.assert_op_error(h.make_op('ReduceFrontMax', ['X', 'L'], ['Y']),
                      [x, np.array([1, 5, 1], np.int32)], "'L'", 'lengths must be in')
    h.assert_op_error(h.make_op('ReduceFrontSum', ['X'], ['Y']), [x.astype(np.float64)],
                      "'X'", 'float64')


if __name__ == '__main__':
    h.run_main(__file__)
