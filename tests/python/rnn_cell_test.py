"""rnn_cell (LSTM, BasicRNN, MILSTM, stacked layers) and gru_cell.GRU over
RecurrentNetwork:
outputs against a numpy LSTM, and the gradients of every parameter, the
input sequence and the initial states against central differences of that
numpy LSTM (float64). Also memory_optimization (recomputed steps),
forward_only, 1-D initial states (LSTMInitializer) and step-blob fetching."""
import sys

import numpy as np
import pytest

from doppio import core, gru_cell, model_helper, recurrent, rnn_cell, workspace

T, N, D, H = 4, 3, 3, 4


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_reference(x, lengths, h0, c0, w_i2h, b_i2h, w_h, b_h, forget_bias=0.0,
                   drop_states=False):
    """(hidden_all, hidden_last, cell_all, cell_last) in float64; FC weights
    are [out, in]; gates in the order i, f, o, g."""
    x = x.astype(np.float64)
    h = np.broadcast_to(np.asarray(h0, np.float64).reshape(-1, H), (x.shape[1], H))
    c = np.broadcast_to(np.asarray(c0, np.float64).reshape(-1, H), (x.shape[1], H))
    hs, cs = [], []
    for t in range(x.shape[0]):
        gates = x[t] @ w_i2h.T + b_i2h + h @ w_h.T + b_h
        i, f, o, g = np.split(gates, 4, axis=1)
        c_new = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(g)
        h_new = sigmoid(o) * np.tanh(c_new)
        valid = (t < np.asarray(lengths))[:, None]
        keep_h = np.zeros_like(h) if drop_states else h
        keep_c = np.zeros_like(c) if drop_states else c
        h, c = np.where(valid, h_new, keep_h), np.where(valid, c_new, keep_c)
        hs.append(h)
        cs.append(c)
    return np.stack(hs), h[None], np.stack(cs), c[None]


def build_lstm(outputs_with_grads=(0,), initial_states=True, **kwargs):
    model = model_helper.ModelHelper(name='lstm_test')
    x, lengths = model.net.AddExternalInputs('x', 'lengths')
    states = model.net.AddExternalInputs('h0', 'c0') if initial_states else None
    outputs = rnn_cell.LSTM(model, x, lengths, states, D, H, scope='lstm',
                            outputs_with_grads=outputs_with_grads, **kwargs)
    return model, outputs


PARAMS = ['lstm/i2h_w', 'lstm/i2h_b', 'lstm/gates_t_w', 'lstm/gates_t_b']


def feed_inputs(rng, h0_shape=(1, N, H)):
    values = {
        'x': rng.randn(T, N, D).astype(np.float32),
        'lengths': np.array([T, 2, 3], np.int32),
        'h0': rng.randn(*h0_shape).astype(np.float32),
        'c0': rng.randn(*h0_shape).astype(np.float32),
    }
    for name, value in values.items():
        workspace.FeedBlob(name, value)
    return values


def feed_params(rng):
    shapes = {'lstm/i2h_w': (4 * H, D), 'lstm/i2h_b': (4 * H,),
              'lstm/gates_t_w': (4 * H, H), 'lstm/gates_t_b': (4 * H,)}
    values = {}
    for name, shape in shapes.items():
        values[name] = (0.5 * rng.randn(*shape)).astype(np.float32)
        workspace.FeedBlob(name, values[name])
    return values


@pytest.mark.parametrize('drop_states', [False, True])
def test_lstm_forward_matches_numpy(drop_states):
    rng = np.random.RandomState(1)
    model, outputs = build_lstm(forget_bias=0.7, drop_states=drop_states, forward_only=True)
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    params = feed_params(rng)
    workspace.RunNetOnce(model.net)
    expected = lstm_reference(inputs['x'], inputs['lengths'], inputs['h0'], inputs['c0'],
                              *[params[p] for p in PARAMS], forget_bias=0.7,
                              drop_states=drop_states)
    for blob, want in zip(outputs, expected):
        got = workspace.FetchBlob(blob)
        assert got.shape == want.shape, blob
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(blob))


def numeric_gradient(f, values, name, h=1e-5):
    x = values[name].astype(np.float64)
    grad = np.zeros_like(x)
    for i in range(x.size):
        for sign in (1, -1):
            shifted = dict(values)
            bumped = x.copy()
            bumped.reshape(-1)[i] += sign * h
            shifted[name] = bumped
            grad.reshape(-1)[i] += sign * f(shifted) / (2 * h)
    return grad


def add_projected_loss(model, outputs, which, rng):
    """loss = sum_k <R_k, outputs[k]> with fed random R_k; returns R."""
    terms, weights = [], {}
    for k in which:
        r_name = 'r{}'.format(k)
        shape = (T, N, H) if k in (0, 2) else (1, N, H)
        weights[k] = rng.uniform(-1, 1, shape).astype(np.float32)
        workspace.FeedBlob(r_name, weights[k])
        terms.append(model.net.SumElements(model.net.Mul([outputs[k], r_name]), 'term{}'.format(k)))
    return model.net.Sum(terms, 'loss'), weights


@pytest.mark.parametrize('memory_optimization', [False, True])
def test_lstm_gradients_match_finite_differences(memory_optimization):
    rng = np.random.RandomState(2)
    which = (0, 1, 3)  # hidden_all, hidden_last, cell_last
    model, outputs = build_lstm(outputs_with_grads=which, forget_bias=0.3,
                                memory_optimization=memory_optimization)
    loss, weights = add_projected_loss(model, outputs, which, rng)
    grad_map = model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    params = feed_params(rng)
    workspace.RunNetOnce(model.net)

    values = dict(params, x=inputs['x'], h0=inputs['h0'], c0=inputs['c0'])

    def reference_loss(v):
        out = lstm_reference(v['x'], inputs['lengths'], v['h0'], v['c0'],
                             *[v[p] for p in PARAMS], forget_bias=0.3)
        return sum(float(np.sum(out[k] * weights[k])) for k in which)

    for name in PARAMS + ['x', 'h0', 'c0']:
        got = workspace.FetchBlob(grad_map[name])
        want = numeric_gradient(reference_loss, values, name)
        assert got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)


def test_lstm_with_initializer_states_gets_summed_initial_gradients():
    """initial_states=None: LSTMInitializer makes [H] zero parameters, which
    the op repeats over the batch; their gradient sums over it."""
    rng = np.random.RandomState(3)
    model, outputs = build_lstm(initial_states=False)
    loss, weights = add_projected_loss(model, outputs, (0,), rng)
    grad_map = model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    params = feed_params(rng)
    h0 = (0.3 * rng.randn(H)).astype(np.float32)
    workspace.FeedBlob('lstm/initial_hidden_state', h0)
    workspace.RunNetOnce(model.net)
    values = dict(params, h0=h0, c0=np.zeros(H, np.float32))

    def reference_loss(v):
        out = lstm_reference(inputs['x'], inputs['lengths'], v['h0'], v['c0'],
                             *[v[p] for p in PARAMS])
        return float(np.sum(out[0] * weights[0]))

    for blob, name in (('lstm/initial_hidden_state', 'h0'), ('lstm/initial_cell_state', 'c0')):
        got = workspace.FetchBlob(grad_map[blob])
        np.testing.assert_allclose(got, numeric_gradient(reference_loss, values, name),
                                   rtol=1e-3, atol=1e-4, err_msg=blob)


def test_stacked_lstm_matches_chained_numpy_layers():
    rng = np.random.RandomState(4)
    model = model_helper.ModelHelper(name='stacked')
    x, lengths = model.net.AddExternalInputs('x', 'lengths')
    states = model.net.AddExternalInputs('h0a', 'c0a', 'h0b', 'c0b')
    outputs = rnn_cell.LSTM(model, x, lengths, states, D, [H, H], scope='deep',
                            return_last_layer_only=False, forward_only=True)
    assert len(outputs) == 8
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    init = {n: rng.randn(1, N, H).astype(np.float32) for n in ('h0a', 'c0a', 'h0b', 'c0b')}
    for n, v in init.items():
        workspace.FeedBlob(n, v)
    workspace.RunNetOnce(model.net)
    layer_input = inputs['x']
    for layer, (h0, c0) in enumerate((('h0a', 'c0a'), ('h0b', 'c0b'))):
        # Layer 0's input projection runs outside the step net, under the
        # stack's scope (as in Caffe2).
        prefix = 'deep/layer_{}/'.format(layer)
        i2h = 'deep/' if layer == 0 else prefix
        params = [workspace.FetchBlob(name) for name in (
            i2h + 'i2h_w', i2h + 'i2h_b', prefix + 'gates_t_w', prefix + 'gates_t_b')]
        want = lstm_reference(layer_input, inputs['lengths'], init[h0], init[c0], *params)
        got = [workspace.FetchBlob(b) for b in outputs[4 * layer:4 * layer + 4]]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        layer_input = want[0].astype(np.float32)


def test_basic_rnn_tanh_matches_numpy():
    rng = np.random.RandomState(5)
    model = model_helper.ModelHelper(name='basic')
    x, lengths, h0 = model.net.AddExternalInputs('x', 'lengths', 'h0')
    outputs = rnn_cell.BasicRNN(model, x, lengths, [h0], D, H, scope='rnn', activation='tanh',
                                forward_only=True)
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    workspace.RunNetOnce(model.net)
    w_i, b_i, w_h, b_h = [workspace.FetchBlob('rnn/' + p)
                          for p in ('i2h_w', 'i2h_b', 'gates_t_w', 'gates_t_b')]
    h = inputs['h0'][0].astype(np.float64)
    hs = []
    for t in range(T):
        new = np.tanh(inputs['x'][t] @ w_i.T + b_i + h @ w_h.T + b_h)
        h = np.where((t < inputs['lengths'])[:, None], new, h)
        hs.append(h)
    np.testing.assert_allclose(workspace.FetchBlob(outputs[0]), np.stack(hs), rtol=1e-5,
                               atol=1e-5)


def gru_reference(x, lengths, h0, p, linear_before_reset):
    h = np.asarray(h0, np.float64).reshape(-1, H)
    hs = []
    for t in range(x.shape[0]):
        r_in, u_in, o_in = np.split(x[t] @ p['i2h_w'].T + p['i2h_b'], 3, axis=1)
        r = sigmoid(h @ p['reset_gate_t_w'].T + p['reset_gate_t_b'] + r_in)
        u = sigmoid(h @ p['update_gate_t_w'].T + p['update_gate_t_b'] + u_in)
        if linear_before_reset:
            o = r * (h @ p['output_gate_t_w'].T + p['output_gate_t_b']) + o_in
        else:
            o = (r * h) @ p['output_gate_t_w'].T + p['output_gate_t_b'] + o_in
        new = u * h + (1 - u) * np.tanh(o)
        h = np.where((t < np.asarray(lengths))[:, None], new, h)
        hs.append(h)
    return np.stack(hs)


@pytest.mark.parametrize('linear_before_reset', [False, True])
def test_gru_forward_and_gradients_match_numpy(linear_before_reset):
    rng = np.random.RandomState(10)
    model = model_helper.ModelHelper(name='gru')
    x, lengths, h0 = model.net.AddExternalInputs('x', 'lengths', 'h0')
    outputs = gru_cell.GRU(model, x, lengths, [h0], D, H, scope='gru',
                           linear_before_reset=linear_before_reset)
    loss, weights = add_projected_loss(model, outputs, (0,), rng)
    grad_map = model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    inputs = feed_inputs(rng)
    workspace.RunNetOnce(model.net)
    names = ['i2h_w', 'i2h_b', 'reset_gate_t_w', 'reset_gate_t_b', 'update_gate_t_w',
             'update_gate_t_b', 'output_gate_t_w', 'output_gate_t_b']
    params = {n: workspace.FetchBlob('gru/' + n).astype(np.float64) for n in names}
    want = gru_reference(inputs['x'], inputs['lengths'], inputs['h0'], params,
                         linear_before_reset)
    np.testing.assert_allclose(workspace.FetchBlob(outputs[0]), want, rtol=1e-4, atol=1e-5)
    values = dict(params, x=inputs['x'], h0=inputs['h0'])

    def reference_loss(v):
        out = gru_reference(v['x'], inputs['lengths'], v['h0'], v, linear_before_reset)
        return float(np.sum(out * weights[0]))

    for name in ('reset_gate_t_w', 'update_gate_t_b', 'output_gate_t_w', 'i2h_w', 'x', 'h0'):
        blob = name if name in ('x', 'h0') else 'gru/' + name
        np.testing.assert_allclose(workspace.FetchBlob(grad_map[blob]),
                                   numeric_gradient(reference_loss, values, name),
                                   rtol=1e-3, atol=1e-4, err_msg=name)


def test_milstm_gradient_matches_finite_differences_of_the_net():
    """MILSTM through ElementwiseLinear and Mul: the analytic gradient of a
    parameter against central differences of the net's own forward pass."""
    rng = np.random.RandomState(6)
    model = model_helper.ModelHelper(name='mi')
    x, lengths, h0, c0 = model.net.AddExternalInputs('x', 'lengths', 'h0', 'c0')
    outputs = rnn_cell.MILSTM(model, x, lengths, (h0, c0), D, H, scope='mi')
    loss, _ = add_projected_loss(model, outputs, (0,), rng)
    grad_map = model.AddGradientOperators([loss])
    # Seeded: unseeded fills draw new weights each run, and a rare draw put
    # a finite difference on a steep stretch (one run in many failed).
    model.param_init_net.Proto().device_option.random_seed = 6
    workspace.RunNetOnce(model.param_init_net)
    feed_inputs(rng)
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net.Name())
    for name in ('mi/alpha', 'mi/prev_t_w', 'x'):
        got = workspace.FetchBlob(grad_map[name]).astype(np.float64)
        value = workspace.FetchBlob(name).copy()
        numeric = np.zeros(value.shape)
        for i in range(value.size):
            total = 0.0
            for sign in (1, -1):
                bumped = value.copy()
                bumped.reshape(-1)[i] += sign * 1e-2
                workspace.FeedBlob(name, bumped)
                workspace.RunNet(model.net.Name())
                total += sign * float(workspace.FetchBlob(loss))
            numeric.reshape(-1)[i] = total / 2e-2
        workspace.FeedBlob(name, value)
        np.testing.assert_allclose(got, numeric, rtol=5e-2, atol=5e-3, err_msg=name)


def test_forward_only_has_no_gradient_and_retrieve_step_blobs_copies_steps():
    rng = np.random.RandomState(7)
    model, outputs = build_lstm(forward_only=True)
    op = [o for o in model.net.Proto().op if o.type == 'RecurrentNetwork'][0]
    assert not any(a.name == 'backward_step_net' for a in op.arg)
    workspace.RunNetOnce(model.param_init_net)
    feed_inputs(rng)
    workspace.RunNetOnce(model.net)
    names = [n.decode() for n in recurrent.retrieve_step_blobs(model.net, 'probe')]
    assert names and all(n.startswith('probe_') for n in names)
    assert any('hidden_state' in n for n in names)
    with pytest.raises(Exception, match='outputs_with_grads|forward_only'):
        model.AddGradientOperators([outputs[0]])


def test_bad_initial_state_names_the_blob():
    rng = np.random.RandomState(8)
    model, _ = build_lstm(forward_only=True)
    workspace.RunNetOnce(model.param_init_net)
    feed_inputs(rng)
    workspace.FeedBlob('h0', np.zeros((1, N + 1, H), np.float32))
    with pytest.raises(Exception, match="h0"):
        workspace.RunNetOnce(model.net)


def test_gradient_before_forward_is_a_clear_error():
    model, outputs = build_lstm()
    model.AddGradientOperators([model.net.SumElements(outputs[0], 'loss')])
    grad_op = [o for o in model.net.Proto().op if o.type == 'RecurrentNetworkGradient'][0]
    forward_op = [o for o in model.net.Proto().op if o.type == 'RecurrentNetwork'][0]
    rng = np.random.RandomState(9)
    workspace.RunNetOnce(model.param_init_net)
    feed_inputs(rng)
    workspace.FeedBlob('lstm/i2h', np.zeros((T, N, 4 * H), np.float32))
    for name in forward_op.output:
        workspace.CreateBlob(name)
    workspace.FeedBlob(grad_op.input[0], np.zeros((T, N, H), np.float32))
    with pytest.raises(Exception, match='step workspaces|before its gradient'):
        workspace.RunOperatorOnce(grad_op)


def test_get_ssa_versions_blobs():
    net = core.Net('ssa')
    net.Relu('a', 'b')
    net.Relu('b', 'b')
    net.Add(['a', 'b'], 'c')
    ssa, versions = core.get_ssa(net)
    assert ssa[1] == ([('b', 1)], [('b', 2)])
    assert ssa[2] == ([('a', 0), ('b', 2)], [('c', 1)])
    assert versions == {'a': 0, 'b': 2, 'c': 1}
    assert core.get_undefined_blobs(ssa) == {'a'}
    assert core.get_op_ids_in_path(ssa, versions, ['a'], ['c']) == [0, 1, 2]


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
