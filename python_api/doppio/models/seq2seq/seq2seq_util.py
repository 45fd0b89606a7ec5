"""Building blocks of Caffe2's sequence-to-sequence models
(caffe2.python.models.seq2seq.seq2seq_util): vocabularies, embeddings, the
LSTM encoder (uni- or bidirectional first layer), the decoder's initial
states, the attention decoder and the output projection.

Names and blob names follow Caffe2's, so checkpoints written by Caffe2's
seq2seq trainer load into models built here and the other way round."""
import collections

from doppio import attention, brew, core, rnn_cell
from doppio.proto import doppio_pb2

PAD_ID, PAD = 0, '<PAD>'
GO_ID, GO = 1, '<GO>'
EOS_ID, EOS = 2, '<EOS>'
UNK_ID, UNK = 3, '<UNK>'


def gen_vocab(corpus, unk_threshold):
    """token -> id for the whitespace-separated tokens of the file `corpus`
    seen more than unk_threshold times; ids 0..3 are PAD, GO, EOS, UNK and
    unseen lookups get the next free id (a defaultdict, as Caffe2's)."""
    vocab = collections.defaultdict(lambda: len(vocab))
    for special in (PAD, GO, EOS, UNK):
        vocab[special]
    counts = collections.Counter()
    with open(corpus) as f:
        for line in f:
            counts.update(line.split())
    for token, count in counts.items():
        if count > unk_threshold:
            vocab[token]
    return vocab


def get_numberized_sentence(sentence, vocab):
    """The ids of a sentence's tokens, UNK's for tokens not in vocab."""
    return [vocab[token] if token in vocab else vocab[UNK] for token in sentence.split()]


def _scoped(scope, name):
    return (scope + '/' if scope else '') + name


def rnn_unidirectional_layer(model, inputs, input_lengths, input_size, num_units,
                             dropout_keep_prob, forward_only, return_sequence_output,
                             return_final_state, scope=None):
    """One LSTM layer over `inputs` [T, N, input_size] from zero states;
    returns (every-step outputs, final hidden state, final cell state)."""
    with core.NameScope(scope):
        initial_cell_state = model.param_init_net.ConstantFill(
            [], 'initial_cell_state', shape=[num_units], value=0.0)
        initial_hidden_state = model.param_init_net.ConstantFill(
            [], 'initial_hidden_state', shape=[num_units], value=0.0)
    cell = rnn_cell.LSTMCell(input_size=input_size, hidden_size=num_units, forget_bias=0.0,
                             memory_optimization=False, name=_scoped(scope, 'lstm'),
                             forward_only=forward_only)
    if dropout_keep_prob is not None:
        cell = rnn_cell.DropoutCell(internal_cell=cell, dropout_ratio=1.0 - dropout_keep_prob,
                                    name=_scoped(scope, 'dropout'), forward_only=forward_only,
                                    is_test=False)
    outputs_with_grads = ([0] if return_sequence_output else []) + (
        [1, 3] if return_final_state else [])
    outputs, (_, final_hidden_state, _, final_cell_state) = cell.apply_over_sequence(
        model=model, inputs=inputs, seq_lengths=input_lengths,
        initial_states=(initial_hidden_state, initial_cell_state),
        outputs_with_grads=outputs_with_grads)
    return outputs, final_hidden_state, final_cell_state


def rnn_bidirectional_layer(model, inputs, input_lengths, input_size, num_units,
                            dropout_keep_prob, forward_only, return_sequence_output,
                            return_final_state, scope=None):
    """A forward and a backward LSTM layer (the backward one reads each
    sequence reversed within its length); outputs and final states are the
    two concatenated on the feature axis."""
    layer = dict(input_lengths=input_lengths, input_size=input_size, num_units=num_units,
                 dropout_keep_prob=dropout_keep_prob, forward_only=forward_only,
                 return_sequence_output=return_sequence_output,
                 return_final_state=return_final_state)
    outputs_fw, hidden_fw, cell_fw = rnn_unidirectional_layer(
        model, inputs, scope=_scoped(scope, 'fw'), **layer)
    with core.NameScope(scope):
        reversed_inputs = model.net.ReversePackedSegs([inputs, input_lengths],
                                                      ['reversed_inputs'])
    outputs_bw, hidden_bw, cell_bw = rnn_unidirectional_layer(
        model, reversed_inputs, scope=_scoped(scope, 'bw'), **layer)
    with core.NameScope(scope):
        outputs_bw = model.net.ReversePackedSegs([outputs_bw, input_lengths], ['outputs_bw'])
        outputs = final_hidden_state = final_cell_state = None
        if return_sequence_output:
            outputs, _ = model.net.Concat([outputs_fw, outputs_bw], ['outputs', 'outputs_dim'],
                                          axis=2)
        if return_final_state:
            final_hidden_state, _ = model.net.Concat(
                [hidden_fw, hidden_bw], ['final_hidden_state', 'final_hidden_state_dim'], axis=2)
            final_cell_state, _ = model.net.Concat(
                [cell_fw, cell_bw], ['final_cell_state', 'final_cell_state_dim'], axis=2)
    return outputs, final_hidden_state, final_cell_state


def build_embeddings(model, vocab_size, embedding_size, name, freeze_embeddings):
    """A [vocab_size, embedding_size] N(0, 0.1) table, trainable unless
    frozen."""
    embeddings = model.param_init_net.GaussianFill([], name, shape=[vocab_size, embedding_size],
                                                   std=0.1)
    if not freeze_embeddings:
        model.params.append(embeddings)
    return embeddings


def get_layer_scope(scope, layer_type, i):
    return '{}/layer{}'.format(_scoped(scope, layer_type), i)


def _embed(model, embeddings, inputs, name, num_gpus):
    """Embedding lookup; with GPUs on the CPU (where the table lives) and the
    result copied to the GPU, as Caffe2's trainer does."""
    if num_gpus == 0:
        return model.net.Gather([embeddings, inputs], [name])
    with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU)):
        on_cpu = model.net.Gather([embeddings, inputs], [name + '_cpu'])
    return model.CopyCPUToGPU(on_cpu, name)


def build_embedding_encoder(model, encoder_params, num_decoder_layers, inputs, input_lengths,
                            vocab_size, embeddings, embedding_size, use_attention, num_gpus=0,
                            forward_only=False, scope=None):
    """The encoder: embeddings, then encoder_params['encoder_layer_configs']
    LSTM layers (the first bidirectional with use_bidirectional_encoder).
    Returns (outputs of the last layer, weighted outputs (None), final
    hidden states, final cell states, output size per layer); only the last
    num_decoder_layers layers report final states."""
    with core.NameScope(scope or ''):
        layer_inputs = _embed(model, embeddings, inputs, 'embedded_encoder_inputs', num_gpus)
    layer_input_size = embedding_size
    configs = encoder_params['encoder_layer_configs']
    bidirectional = encoder_params.get('use_bidirectional_encoder', False)
    units_per_layer, final_hidden_states, final_cell_states = [], [], []
    for i, config in enumerate(configs):
        both_ways = bidirectional and i == 0
        output_size = (2 if both_ways else 1) * config['num_units']
        units_per_layer.append(output_size)
        last = i == len(configs) - 1
        layer = rnn_bidirectional_layer if both_ways else rnn_unidirectional_layer
        outputs, final_hidden, final_cell = layer(
            model=model, inputs=layer_inputs, input_lengths=input_lengths,
            input_size=layer_input_size, num_units=config['num_units'],
            dropout_keep_prob=config.get('dropout_keep_prob', None), forward_only=forward_only,
            return_sequence_output=use_attention or not last,
            return_final_state=i >= len(configs) - num_decoder_layers,
            scope=get_layer_scope(scope, 'encoder', i))
        layer_inputs, layer_input_size = outputs, output_size
        final_hidden_states.append(final_hidden)
        final_cell_states.append(final_cell)
    return layer_inputs, None, final_hidden_states, final_cell_states, units_per_layer


class LSTMWithAttentionDecoder(object):
    """The decoder cell: stacked LSTM cells, wrapped in an AttentionCell over
    the encoder outputs unless attention_type is 'none'."""

    _ATTENTION_TYPES = {'regular': attention.AttentionType.Regular,
                        'recurrent': attention.AttentionType.Recurrent}

    def __init__(self, encoder_outputs, encoder_output_dim, encoder_lengths, vocab_size,
                 attention_type, embedding_size, decoder_num_units, decoder_cells,
                 residual_output_layers=None, name=None, weighted_encoder_outputs=None):
        self.name = name
        self.num_layers = len(decoder_cells)
        decoder_cell = rnn_cell.MultiRNNCell(decoder_cells, name=self.scope('decoder'),
                                             residual_output_layers=residual_output_layers)
        self.output_indices = decoder_cell.output_indices
        self.use_attention = attention_type != 'none'
        if not self.use_attention:
            self.cell = decoder_cell
            self.decoder_output_dim = decoder_num_units
            return
        if attention_type not in self._ATTENTION_TYPES:
            raise ValueError('unknown attention type {!r}; use one of {}'.format(
                attention_type, sorted(self._ATTENTION_TYPES) + ['none']))
        self.cell = rnn_cell.AttentionCell(
            encoder_output_dim=encoder_output_dim, encoder_outputs=encoder_outputs,
            encoder_lengths=encoder_lengths, decoder_cell=decoder_cell,
            decoder_state_dim=decoder_num_units, name=self.scope('attention_decoder'),
            attention_type=self._ATTENTION_TYPES[attention_type],
            weighted_encoder_outputs=weighted_encoder_outputs,
            attention_memory_optimization=True)
        self.decoder_output_dim = decoder_num_units + encoder_output_dim
        # The attention context, the state after the decoder layers' pairs.
        self.output_indices.append(2 * self.num_layers)

    def scope(self, name):
        return self.name + '/' + name if self.name is not None else name

    def get_state_names(self):
        return self.cell.get_state_names()

    def get_outputs_with_grads(self):
        # A state's every-step output is the RecurrentNetwork output at twice
        # the state's index (each state has an all-steps and a last output).
        return [2 * i for i in self.output_indices]

    def get_output_dim(self):
        return self.decoder_output_dim

    def get_attention_weights(self):
        if not self.use_attention:
            raise AssertionError('a decoder without attention has no attention weights')
        return self.cell.get_attention_weights()

    def apply(self, model, input_t, seq_lengths, states, timestep):
        return self.cell.apply(model=model, input_t=input_t, seq_lengths=seq_lengths,
                               states=states, timestep=timestep)

    def apply_over_sequence(self, model, inputs, seq_lengths, initial_states):
        return self.cell.apply_over_sequence(
            model=model, inputs=inputs, seq_lengths=seq_lengths, initial_states=initial_states,
            outputs_with_grads=self.get_outputs_with_grads())


def _initial_decoder_state(model, final_encoder_state, name, encoder_units, decoder_units):
    """A decoder layer's initial hidden or cell state: a trainable zero
    vector without an encoder state, the encoder's projected by an FC when
    the sizes differ, else the encoder's as is."""
    if final_encoder_state is None:
        state = model.param_init_net.ConstantFill([], name, shape=[decoder_units], value=0.0)
        model.params.append(state)
        return state
    if decoder_units != encoder_units:
        return brew.fc(model, final_encoder_state, name, encoder_units, decoder_units, axis=2)
    return final_encoder_state


def build_initial_rnn_decoder_states(model, encoder_units_per_layer, decoder_units_per_layer,
                                     final_encoder_hidden_states, final_encoder_cell_states,
                                     use_attention):
    """Initial (hidden, cell) per decoder layer from the final states of the
    top encoder layers, then (with attention) a trainable zero initial
    attention context."""
    offset = max(0, len(encoder_units_per_layer) - len(decoder_units_per_layer))
    states = []
    for i, decoder_units in enumerate(decoder_units_per_layer):
        k = i + offset
        for finals, kind in ((final_encoder_hidden_states, 'hidden'),
                             (final_encoder_cell_states, 'cell')):
            final = finals[k] if finals and len(finals) > k else None
            encoder_units = encoder_units_per_layer[k] if final is not None else None
            states.append(_initial_decoder_state(
                model, final, 'decoder_initial_{}_state_{}'.format(kind, i), encoder_units,
                decoder_units))
    if use_attention:
        context = model.param_init_net.ConstantFill(
            [], 'initial_attention_weighted_encoder_context',
            shape=[encoder_units_per_layer[-1]], value=0.0)
        model.params.append(context)
        states.append(context)
    return states


def build_embedding_decoder(model, decoder_layer_configs, inputs, input_lengths,
                            encoder_lengths, encoder_outputs, weighted_encoder_outputs,
                            final_encoder_hidden_states, final_encoder_cell_states,
                            encoder_units_per_layer, vocab_size, embeddings, embedding_size,
                            attention_type, forward_only, num_gpus=0, scope=None):
    """The training decoder over the whole target sequence; returns its
    outputs flattened to [T * N, output size] and that size."""
    with core.NameScope(scope or ''):
        embedded = _embed(model, embeddings, inputs, 'embedded_decoder_inputs', num_gpus)
    cells, units_per_layer = [], []
    for i, config in enumerate(decoder_layer_configs):
        units_per_layer.append(config['num_units'])
        cell = rnn_cell.LSTMCell(
            forward_only=forward_only,
            input_size=embedding_size if i == 0 else cells[-1].get_output_dim(),
            hidden_size=config['num_units'], forget_bias=0.0, memory_optimization=False)
        keep = config.get('dropout_keep_prob', None)
        if keep is not None:
            cell = rnn_cell.DropoutCell(internal_cell=cell, dropout_ratio=1.0 - keep,
                                        forward_only=forward_only, is_test=False,
                                        name=get_layer_scope(scope, 'decoder_dropout', i))
        cells.append(cell)
    states = build_initial_rnn_decoder_states(
        model=model, encoder_units_per_layer=encoder_units_per_layer,
        decoder_units_per_layer=units_per_layer,
        final_encoder_hidden_states=final_encoder_hidden_states,
        final_encoder_cell_states=final_encoder_cell_states,
        use_attention=attention_type != 'none')
    decoder = LSTMWithAttentionDecoder(
        encoder_outputs=encoder_outputs, encoder_output_dim=encoder_units_per_layer[-1],
        encoder_lengths=encoder_lengths, vocab_size=vocab_size, attention_type=attention_type,
        embedding_size=embedding_size, decoder_num_units=units_per_layer[-1],
        decoder_cells=cells, weighted_encoder_outputs=weighted_encoder_outputs, name=scope)
    outputs, _ = decoder.apply_over_sequence(model=model, inputs=embedded,
                                             seq_lengths=input_lengths, initial_states=states)
    # One softmax over every step of every sequence.
    flattened, _ = model.net.Reshape(
        [outputs],
        ['decoder_outputs_flattened', 'decoder_outputs_and_contexts_combination_old_shape'],
        shape=[-1, decoder.get_output_dim()])
    return flattened, decoder.get_output_dim()


def output_projection(model, decoder_outputs, decoder_output_size, target_vocab_size,
                      decoder_softmax_size):
    """Logits over the target vocabulary (through a decoder_softmax_size FC
    first when given)."""
    if decoder_softmax_size is not None:
        decoder_outputs = brew.fc(model, decoder_outputs, 'decoder_outputs_scaled',
                                  dim_in=decoder_output_size, dim_out=decoder_softmax_size)
        decoder_output_size = decoder_softmax_size
    weights = model.param_init_net.XavierFill(
        [], 'output_projection_w', shape=[target_vocab_size, decoder_output_size])
    bias = model.param_init_net.XavierFill([], 'output_projection_b', shape=[target_vocab_size])
    model.params.extend([weights, bias])
    return model.net.FC([decoder_outputs, weights, bias], ['output_logits'])
