"""caffe2.python.rnn_cell: recurrent cells (rnn_cells, attention_cell) and
the builders over them: LSTM, BasicRNN, MILSTM, LayerNormLSTM,
LayerNormMILSTM, LSTMWithAttention, layered_LSTM, and the parameter helpers.

A cell builds one timestep (its `_apply` adds ops to a step model); the base
class's apply_over_sequence runs that step over a sequence with a
RecurrentNetwork op (recurrent.recurrent_net).
"""
import functools

import numpy as np

from doppio import workspace
from doppio.attention import AttentionType  # noqa: F401  (Caffe2 scripts import it here)
from doppio.attention_cell import (  # noqa: F401
    AttentionCell, LSTMWithAttentionCell, MILSTMWithAttentionCell)
from doppio.rnn_cells import (  # noqa: F401
    BasicRNNCell, DropoutCell, LayerNormLSTMCell, LayerNormMILSTMCell, LSTMCell,
    LSTMInitializer, MILSTMCell, MultiRNNCell, MultiRNNCellInitializer, RNNCell, UnrolledCell,
    _RectifyName, _RectifyNames)


def _LSTM(cell_class, model, input_blob, seq_lengths, initial_states, dim_in, dim_out,
          scope=None, outputs_with_grads=(0,), return_params=False, memory_optimization=False,
          forget_bias=0.0, forward_only=False, drop_states=False, return_last_layer_only=True,
          static_rnn_unroll_size=None, **cell_kwargs):
    """Adds an LSTM (cell_class) over input_blob [T, N, dim_in]; dim_out is
    an int or one int per layer. Returns (hidden_all, hidden_last, cell_all,
    cell_last) of the last layer (of every layer without
    return_last_layer_only), plus the parameter names with return_params.
    outputs_with_grads index those four outputs of the last layer."""
    if not isinstance(dim_out, (list, tuple)):
        dim_out = [dim_out]
    num_layers = len(dim_out)
    cells = [
        cell_class(input_size=(dim_in if i == 0 else dim_out[i - 1]), hidden_size=dim_out[i],
                   forget_bias=forget_bias, memory_optimization=memory_optimization,
                   name=scope if num_layers == 1 else None, forward_only=forward_only,
                   drop_states=drop_states, **cell_kwargs)
        for i in range(num_layers)
    ]
    cell = MultiRNNCell(cells, name=scope, forward_only=forward_only) \
        if num_layers > 1 else cells[0]
    if static_rnn_unroll_size is not None:
        cell = UnrolledCell(cell, static_rnn_unroll_size)
    outputs_with_grads = [4 * (num_layers - 1) + i for i in outputs_with_grads]
    _, result = cell.apply_over_sequence(model=model, inputs=input_blob,
                                         seq_lengths=seq_lengths, initial_states=initial_states,
                                         outputs_with_grads=outputs_with_grads)
    if return_last_layer_only:
        result = result[4 * (num_layers - 1):]
    if return_params:
        result = list(result) + [{'input': cell.get_input_params(),
                                  'recurrent': cell.get_recurrent_params()}]
    return tuple(result)


LSTM = functools.partial(_LSTM, LSTMCell)
BasicRNN = functools.partial(_LSTM, BasicRNNCell)
MILSTM = functools.partial(_LSTM, MILSTMCell)
LayerNormLSTM = functools.partial(_LSTM, LayerNormLSTMCell)
LayerNormMILSTM = functools.partial(_LSTM, LayerNormMILSTMCell)


def LSTMWithAttention(model, decoder_inputs, decoder_input_lengths,
                      initial_decoder_hidden_state, initial_decoder_cell_state,
                      initial_attention_weighted_encoder_context, encoder_output_dim,
                      encoder_outputs, encoder_lengths, decoder_input_dim, decoder_state_dim,
                      scope, attention_type=AttentionType.Regular, outputs_with_grads=(0, 4),
                      weighted_encoder_outputs=None, lstm_memory_optimization=False,
                      attention_memory_optimization=False, forget_bias=0.0,
                      forward_only=False):
    """An LSTM decoder over decoder_inputs [T, N, decoder_input_dim] attending
    over encoder_outputs [encoder_length, N, encoder_output_dim] (lengths in
    encoder_lengths, or None: all full). Returns the RecurrentNetwork's
    outputs: every-step and last value of hidden, cell, context (and
    coverage with SoftCoverage)."""
    cell = LSTMWithAttentionCell(
        encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
        encoder_lengths=encoder_lengths, decoder_input_dim=decoder_input_dim,
        decoder_state_dim=decoder_state_dim, name=scope, attention_type=attention_type,
        weighted_encoder_outputs=weighted_encoder_outputs, forget_bias=forget_bias,
        lstm_memory_optimization=lstm_memory_optimization,
        attention_memory_optimization=attention_memory_optimization, forward_only=forward_only)
    initial_states = [initial_decoder_hidden_state, initial_decoder_cell_state,
                      initial_attention_weighted_encoder_context]
    if attention_type == AttentionType.SoftCoverage:
        initial_states.append(cell.build_initial_coverage(model))
    _, result = cell.apply_over_sequence(
        model=model, inputs=decoder_inputs, seq_lengths=decoder_input_lengths,
        initial_states=initial_states, outputs_with_grads=outputs_with_grads)
    return result


def _layered_LSTM(model, input_blob, seq_lengths, initial_states, dim_in, dim_out, scope,
                  outputs_with_grads=(0,), return_params=False, memory_optimization=False,
                  forget_bias=0.0, forward_only=False, drop_states=False, create_lstm=None):
    """Stacks single-layer LSTMs (one RecurrentNetwork each), scopes
    '<scope>_layer_<i>' after the first; each layer starts from the previous
    one's last states. Returns the last layer's four outputs."""
    params = dict(model=model, input_blob=input_blob, seq_lengths=seq_lengths,
                  initial_states=initial_states, dim_in=dim_in, dim_out=dim_out, scope=scope,
                  outputs_with_grads=outputs_with_grads, return_params=return_params,
                  memory_optimization=memory_optimization, forget_bias=forget_bias,
                  forward_only=forward_only, drop_states=drop_states)
    if not isinstance(dim_out, list):
        return create_lstm(**params)
    if len(dim_out) == 1:
        params['dim_out'] = dim_out[0]
        return create_lstm(**params)
    if not dim_out:
        raise ValueError("dim_out list can't be empty")
    if return_params:
        raise ValueError('return_params not supported for layering')
    for i, output_dim in enumerate(dim_out):
        params['dim_out'] = output_dim
        output, last_output, all_states, last_state = create_lstm(**params)
        params.update(input_blob=output, dim_in=output_dim,
                      initial_states=(last_output, last_state),
                      scope=scope + '_layer_{}'.format(i + 1))
    return output, last_output, all_states, last_state


layered_LSTM = functools.partial(_layered_LSTM, create_lstm=LSTM)


def cudnn_LSTM(model, input_blob, initial_states, dim_in, dim_out, scope, recurrent_params=None,
               input_params=None, num_layers=1, return_params=False):
    """Caffe2's cuDNN LSTM (its 'Recurrent' op with engine CUDNN). Doppio has
    no cuDNN RNN op yet: rnn_cell.LSTM builds the same network on any
    device."""
    raise NotImplementedError(
        'cudnn_LSTM: the cuDNN Recurrent op is not available in Doppio; use rnn_cell.LSTM '
        '(scope {!r})'.format(scope))


def GetLSTMParamNames():
    weight_params = ['input_gate_w', 'forget_gate_w', 'output_gate_w', 'cell_w']
    bias_params = ['input_gate_b', 'forget_gate_b', 'output_gate_b', 'cell_b']
    return {'weights': weight_params, 'biases': bias_params}


def InitFromLSTMParams(lstm_pblobs, param_values):
    """Feeds an LSTM's parameters (return_params's names) from per-gate
    values: param_values[input_type][gate name] for input_type 'input' and
    'recurrent', gates in GetLSTMParamNames's order."""
    names = GetLSTMParamNames()
    for input_type, values in param_values.items():
        weights = np.concatenate([np.asarray(values[w]).flatten() for w in names['weights']])
        biases = np.concatenate([np.asarray(values[b]).flatten() for b in names['biases']])
        weights_blob = lstm_pblobs[input_type]['weights']
        bias_blob = lstm_pblobs[input_type]['biases']
        current_weights = workspace.FetchBlob(weights_blob)
        current_biases = workspace.FetchBlob(bias_blob)
        workspace.FeedBlob(weights_blob,
                           weights.reshape(current_weights.shape).astype(np.float32))
        workspace.FeedBlob(bias_blob, biases.reshape(current_biases.shape).astype(np.float32))
