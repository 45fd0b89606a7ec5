"""Beam search over a decoder step net, as one RecurrentNetwork op
(caffe2.python.models.seq2seq.beam_search.BeamSearchForwardOnly).

The caller builds one decoding step in get_step_model() from the previous
tokens (get_previous_tokens(), [1, beam]) and the timestep, giving the
step's log-probabilities [beam, vocab] and attention weights; apply() adds
the beam bookkeeping to the step net (best `beam` continuations of each
hypothesis, then the best `beam` overall, and which hypothesis each came
from) and wraps it in a RecurrentNetwork over max_output_seq_len steps. Its
outputs hold every step's beam: tokens, predecessor indices, scores and
attention weights, from which translate.decode reads the best hypothesis.
At step 0 the beam is a single hypothesis (the GO token), so only the first
`beam` candidate scores count."""
from collections import namedtuple

from doppio import core
from doppio.models.seq2seq import seq2seq_util
from doppio.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper


class BeamSearchForwardOnly(object):
    """Forward-only beam search. StateConfig: a recurrent state's initial
    value and the links by which a step reads its previous value
    (state_prev_link) and writes its new one (state_link). LinkConfig: the
    step blob, and the offset and window in the state's time dimension."""

    LinkConfig = namedtuple('LinkConfig', ['blob', 'offset', 'window'])
    StateConfig = namedtuple('StateConfig', ['initial_value', 'state_prev_link', 'state_link'])

    def __init__(self, beam_size, model, eos_token_id, go_token_id=seq2seq_util.GO_ID,
                 post_eos_penalty=None):
        self.beam_size = beam_size
        self.model = model
        self.step_model = Seq2SeqModelHelper(name='step_model', param_model=self.model)
        self.go_token_id = go_token_id
        self.eos_token_id = eos_token_id
        self.post_eos_penalty = post_eos_penalty
        (self.timestep, self.scores_t_prev, self.tokens_t_prev, self.hypo_t_prev,
         self.attention_t_prev) = self.step_model.net.AddExternalInputs(
             'timestep', 'scores_t_prev', 'tokens_t_prev', 'hypo_t_prev', 'attention_t_prev')
        tokens_int32 = self.step_model.net.Cast(self.tokens_t_prev, 'tokens_t_prev_int32',
                                                to=core.DataType.INT32)
        self.tokens_t_prev_int32_flattened, _ = self.step_model.net.Reshape(
            [tokens_int32], [tokens_int32, 'input_t_int32_old_shape'], shape=[1, -1])

    def get_step_model(self):
        return self.step_model

    def get_previous_tokens(self):
        return self.tokens_t_prev_int32_flattened

    def get_timestep(self):
        return self.timestep

    def _fill(self, name, value, dtype, shape=(1,)):
        return self.model.param_init_net.ConstantFill([], name, shape=list(shape), value=value,
                                                      dtype=dtype)

    def _penalize_finished(self, log_probs, on_initial_step):
        """Adds post_eos_penalty to every continuation of a hypothesis that
        already ended (its last token is EOS), from the second step on."""
        net = self.step_model.net
        eos_token = self._fill('eos_token', self.eos_token_id, core.DataType.INT32,
                               [self.beam_size])
        penalty = self._fill('finished_penalty', float(self.post_eos_penalty),
                             core.DataType.FLOAT)
        zero = self._fill('ZERO_FLOAT', 0.0, core.DataType.FLOAT)
        penalty = net.Conditional([on_initial_step, zero, penalty], 'possible_finished_penalty')
        tokens = net.Cast(net.FlattenToVec(self.tokens_t_prev, 'tokens_t_flat'),
                          'tokens_t_flat_int', to=core.DataType.INT32)
        ended = net.Cast(net.EQ([tokens, eos_token], 'predecessor_is_eos'),
                         'predecessor_is_eos_float', to=core.DataType.FLOAT)
        ended_penalty = net.Mul([ended, penalty], 'predecessor_is_eos_penalty', broadcast=1)
        return net.Add([log_probs, ended_penalty], 'log_probs_penalized', broadcast=1, axis=0)

    def _choose_state_per_hypo(self, state_config, hypo_t_int32):
        """The state a step writes, reordered so row k continues the
        hypothesis the k-th best candidate came from."""
        net = self.step_model.net
        blob = state_config.state_link.blob
        flattened, _ = net.Reshape(blob, [blob, blob + '_old_shape'], shape=[self.beam_size, -1])
        chosen = net.Gather([flattened, hypo_t_int32], str(blob) + '_chosen_per_hypo')
        return self.StateConfig(
            initial_value=state_config.initial_value,
            state_prev_link=state_config.state_prev_link,
            state_link=self.LinkConfig(chosen, state_config.state_link.offset,
                                       state_config.state_link.window))

    def _select_beam(self, log_probs, on_initial_step, zero, word_rewards,
                     possible_translation_tokens):
        """The step's new beam: scores [1, beam], the flat index of each
        winner among beam x beam candidates, and the candidates' tokens."""
        net = self.step_model.net
        # [beam, beam]: each hypothesis' best continuations.
        best_scores, best_tokens = net.TopK(
            log_probs, ['best_scores_per_hypo', 'best_tokens_per_hypo_indices'],
            k=self.beam_size)
        if possible_translation_tokens:
            best_tokens = net.Gather([possible_translation_tokens, best_tokens],
                                     ['best_tokens_per_hypo'])
        previous, _ = net.Reshape(self.scores_t_prev,
                                  ['scores_t_prev_squeezed', 'scores_t_prev_old_shape'],
                                  shape=[self.beam_size])
        scores = net.Add([best_scores, previous], 'output_scores', broadcast=1, axis=0)
        if word_rewards is not None:
            rewards = net.Gather([word_rewards, best_tokens],
                                 'word_rewards_for_best_tokens_per_hypo')
            scores = net.Add([scores, rewards], 'output_scores')
        flat, _ = net.Reshape([scores], [scores, 'output_scores_old_shape'], shape=[-1])
        minus_one = self._fill('MINUS_ONE_INT32', -1, core.DataType.INT32)
        beam = self._fill('beam_size', self.beam_size, core.DataType.INT32)
        # One hypothesis at step 0: only its `beam` candidates are real.
        slice_end = net.Conditional([on_initial_step, beam, minus_one], ['slice_end'])
        candidates = net.Slice([flat, zero, slice_end], 'output_scores_flattened_slice')
        candidates, _ = net.Reshape(
            candidates, [candidates, 'output_scores_flattened_slice_old_shape'], shape=[1, -1])
        scores_t, best_indices = net.TopK(candidates, ['scores_t', 'best_indices'],
                                          k=self.beam_size)
        beam_64 = self.model.param_init_net.Cast(beam, 'BEAM_SIZE_64', to=core.DataType.INT64)
        return scores_t, best_indices, best_tokens, beam_64

    def apply(self, inputs, length, log_probs, attentions, state_configs, data_dependencies,
              word_rewards=None, possible_translation_tokens=None, go_token_id=None):
        """Builds the search. inputs: the encoder inputs (their length sizes
        the attention state); length: the number of steps (an int64 blob);
        log_probs [beam, vocab] and attentions [beam, encoder length, 1]:
        the step's; state_configs: the decoder's states; data_dependencies:
        blobs the RecurrentNetwork must wait for. Returns the blobs of every
        step's tokens, predecessor indices, scores and attention weights."""
        net = self.step_model.net
        zero = self._fill('ZERO', 0, core.DataType.INT32)
        on_initial_step = net.EQ([zero, self.timestep], 'on_initial_step')
        if self.post_eos_penalty is not None:
            log_probs = self._penalize_finished(log_probs, on_initial_step)
        scores_t, best_indices, best_tokens, beam_64 = self._select_beam(
            log_probs, on_initial_step, zero, word_rewards, possible_translation_tokens)
        # Which hypothesis each winner continues, and its token.
        hypo_t_int32 = net.Div([best_indices, beam_64], 'hypo_t_int32', broadcast=1)
        hypo_t = net.Cast(hypo_t_int32, 'hypo_t', to=core.DataType.FLOAT)
        attention_t = net.Gather([attentions, hypo_t_int32], 'attention_t')
        attention_t, _ = net.Reshape(attention_t, [attention_t, 'attention_t_old_shape'],
                                     shape=[1, self.beam_size, -1])
        tokens_flat, _ = net.Reshape(
            best_tokens, ['best_tokens_per_hypo_flatten', 'best_tokens_per_hypo_old_shape'],
            shape=[-1])
        tokens_t = net.Cast(net.Gather([tokens_flat, best_indices], 'tokens_t_int32'),
                            'tokens_t', to=core.DataType.FLOAT)
        state_configs = [self._choose_state_per_hypo(c, hypo_t_int32) for c in state_configs]
        state_configs += self._search_states(inputs, go_token_id, scores_t, tokens_t, hypo_t,
                                             attention_t)
        return self._recurrent_network(length, state_configs, data_dependencies,
                                       [scores_t, tokens_t, hypo_t, attention_t])

    def _search_states(self, inputs, go_token_id, scores_t, tokens_t, hypo_t, attention_t):
        """The beam's own states: scores, tokens, predecessor indices and
        attention weights, from a single GO hypothesis of score 0."""
        if go_token_id:
            initial_tokens = self.model.net.Copy([go_token_id], 'initial_tokens')
        else:
            initial_tokens = self._fill('initial_tokens', float(self.go_token_id),
                                        core.DataType.FLOAT)
        flat_inputs, _ = self.model.net.Reshape(
            inputs, ['encoder_inputs_flattened', 'encoder_inputs_old_shape'], shape=[-1])
        initial_attention = self.model.net.ConstantFill(flat_inputs, 'init_attention',
                                                        value=0.0, dtype=core.DataType.FLOAT)
        initial = [self._fill('initial_scores', 0.0, core.DataType.FLOAT), initial_tokens,
                   self._fill('initial_hypo', 0.0, core.DataType.FLOAT), initial_attention]
        previous = [self.scores_t_prev, self.tokens_t_prev, self.hypo_t_prev,
                    self.attention_t_prev]
        current = [scores_t, tokens_t, hypo_t, attention_t]
        return [self.StateConfig(value, self.LinkConfig(prev, 0, 1), self.LinkConfig(new, 1, 1))
                for value, prev, new in zip(initial, previous, current)]

    def _recurrent_network(self, length, state_configs, data_dependencies, outputs):
        # The input only sizes the loop: [length, beam, 1].
        fake_input = self.model.net.ConstantFill(
            length, 'beam_search_fake_input', input_as_shape=True,
            extra_shape=[self.beam_size, 1], value=0.0, dtype=core.DataType.FLOAT)
        all_inputs = ([fake_input] + self.step_model.params +
                      [c.initial_value for c in state_configs] + data_dependencies)
        links, recurrent_states = [], []
        for config in state_configs:
            state = str(config.state_prev_link.blob) + '_states'
            recurrent_states.append(state)
            for link in (config.state_prev_link, config.state_link):
                links.append((str(link.blob), state, link.offset, link.window))
        internal, external, offset, window = zip(*links)
        all_outputs = [str(s) + '_all' for s in outputs]
        results = self.model.net.RecurrentNetwork(
            all_inputs, all_outputs + ['step_workspaces'],
            param=[all_inputs.index(p) for p in self.step_model.params],
            alias_src=[str(s) + '_states' for s in (self.scores_t_prev, self.tokens_t_prev,
                                                    self.hypo_t_prev, self.attention_t_prev)],
            alias_dst=all_outputs, alias_offset=[0] * 4,
            recurrent_states=recurrent_states,
            initial_recurrent_state_ids=[all_inputs.index(c.initial_value)
                                         for c in state_configs],
            link_internal=list(internal), link_external=list(external),
            link_offset=list(offset), link_window=list(window),
            backward_link_internal=[], backward_link_external=[], backward_link_offset=[],
            step_net=self.step_model.net.Proto(), timestep=str(self.timestep),
            outputs_with_grads=[], enable_rnn_executor=1, rnn_executor_debug=0)
        scores_all, tokens_all, hypo_all, attention_all = results[:4]
        net = self.model.net
        return (net.Cast(tokens_all, 'output_token_beam_list', to=core.DataType.INT32),
                net.Cast(hypo_all, 'output_prev_index_beam_list', to=core.DataType.INT32),
                net.Alias(scores_all, 'output_score_beam_list'),
                net.Alias(attention_all, 'output_attention_weights_beam_list'))
