"""rnn_cell's attention cells (re-exported there): a decoder cell whose
every step also attends over encoder outputs (attention.py), as in
Bahdanau et al. (arXiv:1409.0473), computing the new context after the new
decoder state (Luong et al., arXiv:1508.04025). The context is one more
recurrent state, fed to the decoder's gates with the previous hidden state."""
from doppio import brew, core, scope
from doppio.attention import (
    AttentionType, apply_dot_attention, apply_recurrent_attention, apply_regular_attention,
    apply_soft_coverage_attention)
from doppio.proto import caffe2_pb2
from doppio.rnn_cells import LSTMCell, MILSTMCell, RNNCell


class AttentionCell(RNNCell):

    def __init__(self, encoder_output_dim, encoder_outputs, encoder_lengths, decoder_cell,
                 decoder_state_dim, attention_type, weighted_encoder_outputs,
                 attention_memory_optimization, **kwargs):
        super(AttentionCell, self).__init__(**kwargs)
        self.encoder_output_dim = encoder_output_dim
        self.encoder_outputs = encoder_outputs
        self.encoder_lengths = encoder_lengths
        self.decoder_cell = decoder_cell
        self.decoder_state_dim = decoder_state_dim
        self.weighted_encoder_outputs = weighted_encoder_outputs
        self.encoder_outputs_transposed = None
        if attention_type not in (AttentionType.Regular, AttentionType.Recurrent,
                                  AttentionType.Dot, AttentionType.SoftCoverage):
            raise ValueError('unknown attention type {!r}'.format(attention_type))
        self.attention_type = attention_type
        self.attention_memory_optimization = attention_memory_optimization

    def _split_states(self, states):
        """(decoder states, previous context, previous coverage or None)."""
        if self.attention_type == AttentionType.SoftCoverage:
            return states[:-2], states[-2], states[-1]
        return states[:-1], states[-1], None

    def _attend(self, model, context_t_prev, coverage_t_prev):
        """(context, weights, blobs to recompute, coverage or None)."""
        common = dict(model=model, encoder_output_dim=self.encoder_output_dim,
                      encoder_outputs_transposed=self.encoder_outputs_transposed,
                      decoder_hidden_state_t=self.hidden_t_intermediate,
                      decoder_hidden_state_dim=self.decoder_state_dim, scope=self.name,
                      encoder_lengths=self.encoder_lengths)
        if self.attention_type == AttentionType.Dot:
            return apply_dot_attention(**common) + (None,)
        common['weighted_encoder_outputs'] = self.weighted_encoder_outputs
        if self.attention_type == AttentionType.Recurrent:
            return apply_recurrent_attention(
                attention_weighted_encoder_context_t_prev=context_t_prev, **common) + (None,)
        if self.attention_type == AttentionType.Regular:
            return apply_regular_attention(**common) + (None,)
        return apply_soft_coverage_attention(coverage_t_prev=coverage_t_prev,
                                             coverage_weights=self.coverage_weights, **common)

    def _apply(self, model, input_t, seq_lengths, states, timestep, extra_inputs=None):
        if extra_inputs is not None:
            raise ValueError('AttentionCell takes no extra_inputs')
        decoder_prev_states, context_t_prev, coverage_t_prev = self._split_states(states)
        decoder_states = self.decoder_cell._apply(
            model, input_t, seq_lengths, decoder_prev_states, timestep,
            extra_inputs=[(context_t_prev, self.encoder_output_dim)])
        self.hidden_t_intermediate = self.decoder_cell._prepare_output(model, decoder_states)
        context_t, self.attention_weights_3d, attention_blobs, coverage_t = self._attend(
            model, context_t_prev, coverage_t_prev)
        if self.attention_memory_optimization:
            self.recompute_blobs.extend(attention_blobs)
        output = list(decoder_states) + [context_t]
        if coverage_t is not None:
            output.append(coverage_t)
        index = self.decoder_cell.get_output_state_index()
        output[index] = model.net.Copy(output[index], self.scope('hidden_t_external'))
        model.net.AddExternalOutputs(*output)
        return output

    def get_attention_weights(self):
        # [batch, encoder_length, 1]
        return self.attention_weights_3d

    def prepare_input(self, model, input_blob):
        if self.encoder_outputs_transposed is None:
            self.encoder_outputs_transposed = brew.transpose(
                model, self.encoder_outputs, self.scope('encoder_outputs_transposed'),
                axes=[1, 2, 0])
        if self.weighted_encoder_outputs is None and self.attention_type != AttentionType.Dot:
            self.weighted_encoder_outputs = brew.fc(
                model, self.encoder_outputs, self.scope('weighted_encoder_outputs'),
                dim_in=self.encoder_output_dim, dim_out=self.encoder_output_dim, axis=2)
        return self.decoder_cell.prepare_input(model, input_blob)

    def build_initial_coverage(self, model):
        """Zeros [encoder_length] (known only when the net runs), the initial
        coverage; also makes coverage_weights, the encoder outputs' projection
        the coverage enters the match through."""
        if self.attention_type != AttentionType.SoftCoverage:
            raise ValueError('build_initial_coverage is for SoftCoverage attention')
        self.coverage_weights = brew.fc(
            model, self.encoder_outputs, self.scope('coverage_weights'),
            dim_in=self.encoder_output_dim, dim_out=self.encoder_output_dim, axis=2)
        encoder_length = model.net.Slice(model.net.Shape(self.encoder_outputs), starts=[0],
                                         ends=[1])
        device = scope.CurrentDeviceScope()
        if device is not None and device.device_type == caffe2_pb2.CUDA:
            encoder_length = model.net.CopyGPUToCPU(encoder_length, 'encoder_length_cpu')
        return model.net.ConstantFill(encoder_length, self.scope('initial_coverage'), value=0.0,
                                      input_as_shape=1)

    def get_state_names(self):
        names = list(self.decoder_cell.get_state_names())
        names[self.get_output_state_index()] = self.scope('hidden_t_external')
        names.append(self.scope('attention_weighted_encoder_context_t'))
        if self.attention_type == AttentionType.SoftCoverage:
            names.append(self.scope('coverage_t'))
        return names

    def get_output_dim(self):
        return self.decoder_state_dim + self.encoder_output_dim

    def get_output_state_index(self):
        return self.decoder_cell.get_output_state_index()

    def _prepare_output(self, model, states):
        context = states[-2] if self.attention_type == AttentionType.SoftCoverage else states[-1]
        with core.NameScope(self.name or ''):
            return brew.concat(model, [self.hidden_t_intermediate, context],
                               'states_and_context_combination', axis=2)

    def _prepare_output_sequence(self, model, state_outputs):
        extra = 2 if self.attention_type == AttentionType.SoftCoverage else 1
        decoder_output = self.decoder_cell._prepare_output_sequence(
            model, state_outputs[:-2 * extra])
        context_index = 2 * (len(self.get_state_names()) - extra)
        with core.NameScope(self.name or ''):
            return brew.concat(model, [decoder_output, state_outputs[context_index]],
                               'states_and_context_combination', axis=2)


def _decoder(cell_class, name, decoder_input_dim, decoder_state_dim, forget_bias,
             lstm_memory_optimization):
    return cell_class(input_size=decoder_input_dim, hidden_size=decoder_state_dim,
                      forget_bias=forget_bias, memory_optimization=lstm_memory_optimization,
                      name='{}/decoder'.format(name), forward_only=False, drop_states=False)


class LSTMWithAttentionCell(AttentionCell):

    def __init__(self, encoder_output_dim, encoder_outputs, encoder_lengths, decoder_input_dim,
                 decoder_state_dim, name, attention_type, weighted_encoder_outputs, forget_bias,
                 lstm_memory_optimization, attention_memory_optimization, forward_only=False):
        super(LSTMWithAttentionCell, self).__init__(
            encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
            encoder_lengths=encoder_lengths,
            decoder_cell=_decoder(LSTMCell, name, decoder_input_dim, decoder_state_dim,
                                  forget_bias, lstm_memory_optimization),
            decoder_state_dim=decoder_state_dim, name=name, attention_type=attention_type,
            weighted_encoder_outputs=weighted_encoder_outputs,
            attention_memory_optimization=attention_memory_optimization,
            forward_only=forward_only)


class MILSTMWithAttentionCell(AttentionCell):

    def __init__(self, encoder_output_dim, encoder_outputs, decoder_input_dim, decoder_state_dim,
                 name, attention_type, weighted_encoder_outputs, forget_bias,
                 lstm_memory_optimization, attention_memory_optimization, forward_only=False,
                 encoder_lengths=None):
        super(MILSTMWithAttentionCell, self).__init__(
            encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
            encoder_lengths=encoder_lengths,
            decoder_cell=_decoder(MILSTMCell, name, decoder_input_dim, decoder_state_dim,
                                  forget_bias, lstm_memory_optimization),
            decoder_state_dim=decoder_state_dim, name=name, attention_type=attention_type,
            weighted_encoder_outputs=weighted_encoder_outputs,
            attention_memory_optimization=attention_memory_optimization,
            forward_only=forward_only)
