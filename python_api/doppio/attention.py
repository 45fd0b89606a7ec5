"""caffe2.python.attention: the attention mechanisms of rnn_cell's
AttentionCell (Bahdanau-style regular and recurrent attention, dot
attention, soft coverage), with Caffe2's blob names.

Shapes: encoder_outputs_transposed is [batch, encoder_dim, encoder_length],
weighted_encoder_outputs [encoder_length, batch, encoder_dim], the decoder
state [1, batch, decoder_dim]. Each apply_* returns the attention context
[1, batch, encoder_dim], the weights [batch, encoder_length, 1], and the
blobs attention_memory_optimization may recompute (soft coverage also the
new coverage)."""
from doppio import brew


class AttentionType:
    Regular, Recurrent, Dot, SoftCoverage = tuple(range(4))


def s(scope, name):
    # Internal and external blobs of the step net are scoped by hand.
    return '{}/{}'.format(str(scope), str(name))


def _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim,
                           attention_weights_3d, scope):
    # [batch, encoder_dim, 1]
    context = brew.batch_mat_mul(model, [encoder_outputs_transposed, attention_weights_3d],
                                 s(scope, 'attention_weighted_encoder_context'))
    context, _ = model.net.Reshape(
        context, [context, s(scope, 'attention_weighted_encoder_context_old_shape')],
        shape=[1, -1, encoder_output_dim])
    return context


def _calc_attention_weights(model, attention_logits_transposed, scope, encoder_lengths=None):
    if encoder_lengths is not None:
        attention_logits_transposed = model.net.SequenceMask(
            [attention_logits_transposed, encoder_lengths], ['masked_attention_logits'],
            mode='sequence')
    # [batch, encoder_length, 1]
    return brew.softmax(model, attention_logits_transposed, s(scope, 'attention_weights_3d'),
                        engine='CUDNN', axis=1)


def _calc_attention_logits_from_sum_match(model, decoder_hidden_encoder_outputs_sum,
                                          encoder_output_dim, scope):
    summed = model.net.Tanh(decoder_hidden_encoder_outputs_sum,
                            decoder_hidden_encoder_outputs_sum)
    # [encoder_length, batch, 1]
    logits = brew.fc(model, summed, s(scope, 'attention_logits'), dim_in=encoder_output_dim,
                     dim_out=1, axis=2, freeze_bias=True)
    # [batch, encoder_length, 1]
    return brew.transpose(model, logits, s(scope, 'attention_logits_transposed'),
                          axes=[1, 0, 2])


def _apply_fc_weight_for_sum_match(model, input, dim_in, dim_out, scope, name):
    output = brew.fc(model, input, s(scope, name), dim_in=dim_in, dim_out=dim_out, axis=2)
    return model.net.Squeeze(output, output, dims=[0])


def _finish(model, summed, encoder_output_dim, encoder_outputs_transposed, scope,
            encoder_lengths):
    """Logits from the summed match, masked softmax weights, the context."""
    logits = _calc_attention_logits_from_sum_match(model, summed, encoder_output_dim, scope)
    weights = _calc_attention_weights(model, logits, scope, encoder_lengths)
    context = _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim,
                                     weights, scope)
    return context, weights


def apply_recurrent_attention(model, encoder_output_dim, encoder_outputs_transposed,
                              weighted_encoder_outputs, decoder_hidden_state_t,
                              decoder_hidden_state_dim, attention_weighted_encoder_context_t_prev,
                              scope, encoder_lengths=None):
    """Regular attention whose match also sees the previous context."""
    weighted_prev_context = _apply_fc_weight_for_sum_match(
        model, attention_weighted_encoder_context_t_prev, encoder_output_dim,
        encoder_output_dim, scope, 'weighted_prev_attention_context')
    weighted_decoder_hidden_state = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        'weighted_decoder_hidden_state')
    summed_tmp = model.net.Add([weighted_prev_context, weighted_decoder_hidden_state],
                               s(scope, 'decoder_hidden_encoder_outputs_sum_tmp'))
    summed = model.net.Add([weighted_encoder_outputs, summed_tmp],
                           s(scope, 'decoder_hidden_encoder_outputs_sum'), broadcast=1)
    context, weights = _finish(model, summed, encoder_output_dim, encoder_outputs_transposed,
                               scope, encoder_lengths)
    return context, weights, [summed]


def apply_regular_attention(model, encoder_output_dim, encoder_outputs_transposed,
                            weighted_encoder_outputs, decoder_hidden_state_t,
                            decoder_hidden_state_dim, scope, encoder_lengths=None):
    """Bahdanau attention: v^T tanh(W_e e + W_d h) over the encoder steps."""
    weighted_decoder_hidden_state = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        'weighted_decoder_hidden_state')
    summed = model.net.Add([weighted_encoder_outputs, weighted_decoder_hidden_state],
                           s(scope, 'decoder_hidden_encoder_outputs_sum'), broadcast=1,
                           use_grad_hack=1)
    context, weights = _finish(model, summed, encoder_output_dim, encoder_outputs_transposed,
                               scope, encoder_lengths)
    return context, weights, [summed]


def apply_dot_attention(model, encoder_output_dim, encoder_outputs_transposed,
                        decoder_hidden_state_t, decoder_hidden_state_dim, scope,
                        encoder_lengths=None):
    """Logits are dot products of the (projected, if the dims differ)
    decoder state with each encoder output."""
    if decoder_hidden_state_dim != encoder_output_dim:
        weighted_decoder_hidden_state = brew.fc(
            model, decoder_hidden_state_t, s(scope, 'weighted_decoder_hidden_state'),
            dim_in=decoder_hidden_state_dim, dim_out=encoder_output_dim, axis=2)
    else:
        weighted_decoder_hidden_state = decoder_hidden_state_t
    # [batch, dim] -> [batch, dim, 1]
    squeezed = model.net.Squeeze(weighted_decoder_hidden_state,
                                 s(scope, 'squeezed_weighted_decoder_hidden_state'), dims=[0])
    expanded = model.net.ExpandDims(squeezed, squeezed, dims=[2])
    # [batch, encoder_length, 1]
    logits = model.net.BatchMatMul([encoder_outputs_transposed, expanded],
                                   s(scope, 'attention_logits'), trans_a=1)
    weights = _calc_attention_weights(model, logits, scope, encoder_lengths)
    context = _calc_weighted_context(model, encoder_outputs_transposed, encoder_output_dim,
                                     weights, scope)
    return context, weights, []


def apply_soft_coverage_attention(model, encoder_output_dim, encoder_outputs_transposed,
                                  weighted_encoder_outputs, decoder_hidden_state_t,
                                  decoder_hidden_state_dim, scope, encoder_lengths,
                                  coverage_t_prev, coverage_weights):
    """Regular attention whose match also sees the attention paid so far
    (the coverage, [1, batch, encoder_length]) through coverage_weights."""
    weighted_decoder_hidden_state = _apply_fc_weight_for_sum_match(
        model, decoder_hidden_state_t, decoder_hidden_state_dim, encoder_output_dim, scope,
        'weighted_decoder_hidden_state')
    summed = model.net.Add([weighted_encoder_outputs, weighted_decoder_hidden_state],
                           s(scope, 'decoder_hidden_encoder_outputs_sum'), broadcast=1)
    coverage_2d = model.net.Squeeze(coverage_t_prev, s(scope, 'coverage_t_prev_2d'), dims=[0])
    coverage_transposed = brew.transpose(model, coverage_2d,
                                         s(scope, 'coverage_t_prev_transposed'))
    scaled_coverage_weights = model.net.Mul([coverage_weights, coverage_transposed],
                                            s(scope, 'scaled_coverage_weights'), broadcast=1,
                                            axis=0)
    summed = model.net.Add([summed, scaled_coverage_weights], summed)
    context, weights = _finish(model, summed, encoder_output_dim, encoder_outputs_transposed,
                               scope, encoder_lengths)
    weights_2d = model.net.Squeeze(weights, s(scope, 'attention_weights_2d'), dims=[2])
    coverage_t = model.net.Add([coverage_t_prev, weights_2d], s(scope, 'coverage_t'),
                               broadcast=1)
    return context, weights, [summed], coverage_t
