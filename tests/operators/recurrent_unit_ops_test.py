"""LSTMUnit and GRUUnit against numpy steps (with and without seq_lengths,
drop_states, forget_bias), its gradient against finite differences (gates,
cell_prev; hidden_prev for ended rows), and input errors. Also the two small
ops rnn_cell needs: ElementwiseLinear (numpy, finite differences) and
ZeroGradient (its input's gradient is zeros)."""
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

import op_harness as h


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(h_prev, c_prev, gates, lengths, t, forget_bias, drop_states):
    i, f, o, g = np.split(gates.astype(np.float64), 4, axis=2)
    c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * np.tanh(g)
    hid = sigmoid(o) * np.tanh(c)
    if lengths is not None:
        valid = (t < lengths)[None, :, None]
        hid = np.where(valid, hid, 0.0 if drop_states else h_prev)
        c = np.where(valid, c, 0.0 if drop_states else c_prev)
    return hid.astype(np.float32), c.astype(np.float32)


def lstm_inputs(rng, n, d, t, with_lengths):
    inputs = [rng.randn(1, n, d).astype(np.float32), rng.randn(1, n, d).astype(np.float32),
              rng.randn(1, n, 4 * d).astype(np.float32)]
    lengths = rng.randint(0, 4, size=n).astype(np.int32)
    if with_lengths:
        inputs.append(lengths)
    inputs.append(np.array([t], np.int32))
    return inputs, (lengths if with_lengths else None)


def lstm_op(with_lengths, forget_bias, drop_states):
    names = ['h_prev', 'c_prev', 'gates'] + (['lengths'] if with_lengths else []) + ['t']
    return h.make_op('LSTMUnit', names, ['h', 'c'], forget_bias=forget_bias,
                     drop_states=int(drop_states), sequence_lengths=int(with_lengths))


@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 3), st.booleans(), st.booleans(),
       st.sampled_from([0.0, 1.0]))
@settings(max_examples=30, deadline=None)
def test_matches_numpy(n, d, t, with_lengths, drop_states, forget_bias):
    rng = np.random.RandomState(n * 100 + d * 10 + t)
    inputs, lengths = lstm_inputs(rng, n, d, t, with_lengths)
    op = lstm_op(with_lengths, forget_bias, drop_states)
    h.check_output(op, inputs, lambda *a: lstm_step(a[0], a[1], a[2], lengths, t, forget_bias,
                                                    drop_states), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('drop_states', [False, True])
def test_gradient_matches_finite_differences(drop_states):
    rng = np.random.RandomState(3)
    inputs, _ = lstm_inputs(rng, 4, 3, 1, True)
    inputs[3] = np.array([3, 1, 0, 2], np.int32)  # rows 1 and 2 have ended at t = 1
    op = lstm_op(True, 0.5, drop_states)
    h.check_gradient(op, inputs, [0, 1, 2])


def test_bad_shapes_name_the_input():
    rng = np.random.RandomState(4)
    inputs, _ = lstm_inputs(rng, 2, 3, 0, True)
    op = lstm_op(True, 0.0, False)
    bad_gates = list(inputs)
    bad_gates[2] = np.zeros((1, 2, 5), np.float32)
    h.assert_op_error(op, bad_gates, 'gates', '[1, 2, 12]')
    bad_lengths = list(inputs)
    bad_lengths[3] = np.zeros(3, np.int32)
    h.assert_op_error(op, bad_lengths, 'lengths')
    bad_t = list(inputs)
    bad_t[4] = np.array([0.0], np.float32)
    h.assert_op_error(op, bad_t, 'timestep')


def gru_step(h_prev, gates, lengths, t, drop_states):
    _, u, o = np.split(gates.astype(np.float64), 3, axis=2)
    u = sigmoid(u)
    hid = u * h_prev + (1 - u) * np.tanh(o)
    if lengths is not None:
        hid = np.where((t < lengths)[None, :, None], hid, 0.0 if drop_states else h_prev)
    return hid.astype(np.float32)


def gru_inputs(rng, n, d, t, lengths):
    inputs = [rng.randn(1, n, d).astype(np.float32), rng.randn(1, n, 3 * d).astype(np.float32)]
    if lengths is not None:
        inputs.append(np.asarray(lengths, np.int32))
    return inputs + [np.array([t], np.int32)]


def gru_op(with_lengths, drop_states):
    names = ['h_prev', 'gates'] + (['lengths'] if with_lengths else []) + ['t']
    return h.make_op('GRUUnit', names, ['h'], drop_states=int(drop_states),
                     sequence_lengths=int(with_lengths))


@pytest.mark.parametrize('with_lengths,drop_states', [(False, False), (True, False), (True, True)])
def test_gru_unit_matches_numpy_and_finite_differences(with_lengths, drop_states):
    rng = np.random.RandomState(6)
    lengths = np.array([3, 1, 0, 2], np.int32) if with_lengths else None
    inputs = gru_inputs(rng, 4, 3, 1, lengths)
    op = gru_op(with_lengths, drop_states)
    h.check_output(op, inputs, lambda *a: gru_step(a[0], a[1], lengths, 1, drop_states),
                   atol=1e-5, rtol=1e-5)
    h.check_gradient(op, inputs, [0, 1])
    h.assert_op_error(op, [inputs[0], inputs[1][:, :, :8]] + inputs[2:], 'gates', '[1, 4, 9]')


@given(h.dims(1, 4), st.data())
@settings(max_examples=20, deadline=None)
def test_elementwise_linear_matches_numpy(shape, data):
    axis = data.draw(st.integers(0, len(shape) - 1))
    x = data.draw(h.arrays(tuple(shape), np.float32))
    features = int(np.prod(shape[axis:]))
    a = data.draw(h.arrays((features,), np.float32))
    b = data.draw(h.arrays((features,), np.float32))
    op = h.make_op('ElementwiseLinear', ['X', 'a', 'b'], ['Y'], axis=axis)
    h.check_output(op, [x, a, b], lambda x, a, b: (
        x.reshape(-1, features) * a + b).reshape(x.shape), atol=1e-5, rtol=1e-5)


def test_elementwise_linear_gradient_and_errors():
    rng = np.random.RandomState(5)
    x = rng.randn(2, 3, 2).astype(np.float32)
    a, b = rng.randn(6).astype(np.float32), rng.randn(6).astype(np.float32)
    op = h.make_op('ElementwiseLinear', ['X', 'a', 'b'], ['Y'], axis=1)
    h.check_gradient(op, [x, a, b], [0, 1, 2])
    h.assert_op_error(op, [x, a[:5], b], 'a and b', '[6]')


def test_zero_gradient_gives_zeros():
    op = h.make_op('ZeroGradient', ['X'], [])
    ops, grads = h.gradient_ops(op, [])
    assert grads[0] is not None
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with h._FreshWorkspace():
        h._feed(['X'], [x])
        for grad_op in ops:
            h._C.run_operator_once(grad_op.SerializeToString())
        np.testing.assert_array_equal(h._C.fetch_blob(grads[0]), np.zeros_like(x))


if __name__ == '__main__':
    h.run_main(__file__)
