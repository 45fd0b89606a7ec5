"""Beam-search translation with one or an ensemble of Caffe2 seq2seq models
(caffe2.python.models.seq2seq.translate): Seq2SeqModelCaffe2EnsembleDecoder
builds each model's encoder and one decoder step under the scope
'model<i>', averages their log-probabilities and attention weights, and
searches with BeamSearchForwardOnly; load_models reads checkpoints written
by train.Seq2SeqModelCaffe2.save. From the command line it translates the
sentences on stdin:

    python -m doppio.models.seq2seq.translate --source-corpus S \\
        --target-corpus T --checkpoint PATH [model flags as for train]
"""
import argparse
import logging
import sys

import numpy as np

from doppio import core, rnn_cell, workspace
from doppio.models.seq2seq import seq2seq_util
from doppio.models.seq2seq.beam_search import BeamSearchForwardOnly
from doppio.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper

logger = logging.getLogger(__name__)
logger.setLevel(logging.INFO)
logger.addHandler(logging.StreamHandler(sys.stderr))


def _weighted_sum(model, values, weight, output_name):
    """sum_k weight * values[k], one WeightedSum op."""
    inputs = []
    for value in values:
        inputs += [value, weight]
    return model.net.WeightedSum(inputs, output_name)


class Seq2SeqModelCaffe2EnsembleDecoder(object):
    """translate_params: ensemble_models (each: source_vocab, target_vocab,
    model_params, model_file) and decoding_params (beam_size, word_reward,
    unk_reward)."""

    def scope(self, scope_name, blob_name):
        return scope_name + '/' + blob_name if scope_name is not None else blob_name

    def _tile_to_beam(self, model, blob, name):
        return model.net.Tile(blob, name, tiles=self.beam_size, axis=1)

    def _build_encoder(self, model, model_params, scope, use_attention):
        """The model's encoder over the source, its outputs and final states
        tiled over the beam."""
        with core.NameScope(scope):
            embeddings = seq2seq_util.build_embeddings(
                model=model, vocab_size=self.source_vocab_size,
                embedding_size=model_params['encoder_embedding_size'],
                name='encoder_embeddings', freeze_embeddings=False)
        (outputs, weighted_outputs, final_hidden, final_cell,
         units_per_layer) = seq2seq_util.build_embedding_encoder(
             model=model, encoder_params=model_params['encoder_type'],
             num_decoder_layers=len(model_params['decoder_layer_configs']),
             inputs=self.encoder_inputs, input_lengths=self.encoder_lengths,
             vocab_size=self.source_vocab_size, embeddings=embeddings,
             embedding_size=model_params['encoder_embedding_size'],
             use_attention=use_attention, num_gpus=0, forward_only=True, scope=scope)
        with core.NameScope(scope):
            if use_attention:
                # [source length, beam, encoder output size]
                outputs = self._tile_to_beam(model, outputs, 'encoder_outputs_tiled')
            if weighted_outputs is not None:
                weighted_outputs = self._tile_to_beam(model, weighted_outputs,
                                                      'weighted_encoder_outputs_tiled')
        return outputs, weighted_outputs, final_hidden, final_cell, units_per_layer

    def _tile_final_states(self, model, states, kind):
        return [None if state is None else
                self._tile_to_beam(model, state, 'final_encoder_{}_tiled_{}'.format(kind, i))
                for i, state in enumerate(states or [])]

    def _build_decoder(self, model, step_model, model_params, scope, previous_tokens, timestep,
                       fake_seq_lengths):
        """One model's part: its encoder in `model`, one decoder step in
        `step_model`. Returns (its StateConfigs, log-probs [beam, vocab],
        attention weights)."""
        attention_type = model_params['attention']
        if attention_type not in ('none', 'regular'):
            raise ValueError('translate supports attention none or regular, not {!r}'.format(
                attention_type))
        use_attention = attention_type != 'none'
        (encoder_outputs, weighted_encoder_outputs, final_hidden, final_cell,
         encoder_units_per_layer) = self._build_encoder(model, model_params, scope,
                                                        use_attention)
        with core.NameScope(scope):
            decoder_embeddings = seq2seq_util.build_embeddings(
                model=model, vocab_size=self.target_vocab_size,
                embedding_size=model_params['decoder_embedding_size'],
                name='decoder_embeddings', freeze_embeddings=False)
            embedded_tokens = step_model.net.Gather([decoder_embeddings, previous_tokens],
                                                    'embedded_tokens_t_prev')
        layers = model_params['decoder_layer_configs']
        units_per_layer = [layer['num_units'] for layer in layers]
        cells = [rnn_cell.LSTMCell(
            forward_only=True,
            input_size=(model_params['decoder_embedding_size'] if i == 0
                        else units_per_layer[i - 1]),
            hidden_size=units, forget_bias=0.0, memory_optimization=False)
            for i, units in enumerate(units_per_layer)]
        with core.NameScope(scope):
            initial_states = seq2seq_util.build_initial_rnn_decoder_states(
                model=model, encoder_units_per_layer=encoder_units_per_layer,
                decoder_units_per_layer=units_per_layer,
                final_encoder_hidden_states=self._tile_final_states(model, final_hidden,
                                                                    'hidden'),
                final_encoder_cell_states=self._tile_final_states(model, final_cell, 'cell'),
                use_attention=use_attention)
        decoder = seq2seq_util.LSTMWithAttentionDecoder(
            encoder_outputs=encoder_outputs, encoder_output_dim=encoder_units_per_layer[-1],
            encoder_lengths=None, vocab_size=self.target_vocab_size,
            attention_type=attention_type,
            embedding_size=model_params['decoder_embedding_size'],
            decoder_num_units=units_per_layer[-1], decoder_cells=cells,
            weighted_encoder_outputs=weighted_encoder_outputs, name=scope)
        states_prev = step_model.net.AddExternalInputs(
            *['{}/{}_prev'.format(scope, s) for s in decoder.get_state_names()])
        decoder_outputs, states = decoder.apply(model=step_model, input_t=embedded_tokens,
                                                seq_lengths=fake_seq_lengths,
                                                states=states_prev, timestep=timestep)
        link = BeamSearchForwardOnly.LinkConfig
        state_configs = [BeamSearchForwardOnly.StateConfig(initial, link(prev, 0, 1),
                                                           link(state, 1, 1))
                         for initial, prev, state in zip(initial_states, states_prev, states)]
        with core.NameScope(scope):
            log_probs, attention_weights = self._step_outputs(
                step_model, decoder, decoder_outputs, model_params, use_attention)
        return state_configs, log_probs, attention_weights

    def _step_outputs(self, step_model, decoder, decoder_outputs, model_params, use_attention):
        """A decoder step's log-probabilities and attention weights (zeros
        [beam, source length, 1] without attention)."""
        flattened, _ = step_model.net.Reshape(
            [decoder_outputs],
            ['decoder_outputs_flattened', 'decoder_outputs_and_contexts_combination_old_shape'],
            shape=[-1, decoder.get_output_dim()])
        logits = seq2seq_util.output_projection(
            model=step_model, decoder_outputs=flattened,
            decoder_output_size=decoder.get_output_dim(),
            target_vocab_size=self.target_vocab_size,
            decoder_softmax_size=model_params['decoder_softmax_size'])
        probs = step_model.net.Softmax(logits, 'output_probs')
        log_probs = step_model.net.Log(probs, 'output_log_probs')
        if use_attention:
            return log_probs, decoder.get_attention_weights()
        zeros = step_model.net.ConstantFill([self.encoder_inputs], 'zero_attention_weights_tmp_1',
                                            value=0.0)
        zeros = step_model.net.Transpose(zeros, 'zero_attention_weights_tmp_2')
        return log_probs, step_model.net.Tile(zeros, 'zero_attention_weights_tmp',
                                              tiles=self.beam_size, axis=0)

    def build_word_rewards(self, vocab_size, word_reward, unk_reward):
        """Per target token: word_reward, none for PAD/GO/EOS, plus
        unk_reward for UNK."""
        rewards = np.full([vocab_size], word_reward, dtype=np.float32)
        rewards[[seq2seq_util.PAD_ID, seq2seq_util.GO_ID, seq2seq_util.EOS_ID]] = 0
        rewards[seq2seq_util.UNK_ID] = word_reward + unk_reward
        return rewards

    def __init__(self, translate_params):
        self.models = translate_params['ensemble_models']
        decoding_params = translate_params['decoding_params']
        self.beam_size = decoding_params['beam_size']
        if not self.models:
            raise ValueError('ensemble_models is empty')
        source_vocab, target_vocab = self.models[0]['source_vocab'], self.models[0]['target_vocab']
        if any(m['source_vocab'] != source_vocab or m['target_vocab'] != target_vocab
               for m in self.models):
            raise ValueError('the ensemble\'s models must share their vocabularies')
        self.source_vocab_size = len(source_vocab)
        self.target_vocab_size = len(target_vocab)
        self.decoder_scope_names = ['model{}'.format(i) for i in range(len(self.models))]
        self.model = Seq2SeqModelHelper(init_params=True)
        self.encoder_inputs = self.model.net.AddExternalInput('encoder_inputs')
        self.encoder_lengths = self.model.net.AddExternalInput('encoder_lengths')
        self.max_output_seq_len = self.model.net.AddExternalInput('max_output_seq_len')
        # Decoding never ends a hypothesis by length.
        fake_seq_lengths = self.model.param_init_net.ConstantFill(
            [], 'fake_seq_lengths', shape=[self.beam_size], value=100000,
            dtype=core.DataType.INT32)
        beam_decoder = BeamSearchForwardOnly(beam_size=self.beam_size, model=self.model,
                                             go_token_id=seq2seq_util.GO_ID,
                                             eos_token_id=seq2seq_util.EOS_ID)
        step_model = beam_decoder.get_step_model()
        state_configs, log_probs, attention_weights = [], [], []
        for model, scope_name in zip(self.models, self.decoder_scope_names):
            configs, model_log_probs, model_attention = self._build_decoder(
                model=self.model, step_model=step_model, model_params=model['model_params'],
                scope=scope_name, previous_tokens=beam_decoder.get_previous_tokens(),
                timestep=beam_decoder.get_timestep(), fake_seq_lengths=fake_seq_lengths)
            state_configs.extend(configs)
            log_probs.append(model_log_probs)
            if model_attention is not None:
                attention_weights.append(model_attention)
        (self.output_token_beam_list, self.output_prev_index_beam_list,
         self.output_score_beam_list,
         self.output_attention_weights_beam_list) = self._search(
             beam_decoder, step_model, state_configs, log_probs, attention_weights)
        workspace.RunNetOnce(self.model.param_init_net)
        workspace.FeedBlob('word_rewards', self.build_word_rewards(
            vocab_size=self.target_vocab_size, word_reward=decoding_params['word_reward'],
            unk_reward=decoding_params['unk_reward']))
        workspace.CreateNet(self.model.net, input_blobs=[
            str(self.encoder_inputs), str(self.encoder_lengths), str(self.max_output_seq_len)])
        logger.info('Params created: ')
        for param in self.model.params:
            logger.info(param)

    def _search(self, beam_decoder, step_model, state_configs, log_probs, attention_weights):
        """The ensemble average of log-probs and attention, searched."""
        average = self.model.param_init_net.ConstantFill
        attention_average = _weighted_sum(
            model=step_model, values=attention_weights,
            weight=average([], 'num_decoders_with_attention_blob',
                           value=1 / float(len(attention_weights)), shape=[1]),
            output_name='attention_weights_average')
        log_probs_average = _weighted_sum(
            model=step_model, values=log_probs,
            weight=average([], 'num_decoders_blob', value=1 / float(len(log_probs)), shape=[1]),
            output_name='output_log_probs_average')
        word_rewards = self.model.param_init_net.ConstantFill(
            [], 'word_rewards', shape=[self.target_vocab_size], value=0.0,
            dtype=core.DataType.FLOAT)
        return beam_decoder.apply(
            inputs=self.encoder_inputs, length=self.max_output_seq_len,
            log_probs=log_probs_average, attentions=attention_average,
            state_configs=state_configs, data_dependencies=[], word_rewards=word_rewards)

    def load_models(self):
        """Loads each model's parameters from its model_file (a minidb) under
        its scope; 'gpu_0/' prefixes of multi-GPU checkpoints are dropped."""
        for model, scope_name in zip(self.models, self.decoder_scope_names):
            params = [p for p in self.model.GetAllParams() if str(p).startswith(scope_name)]
            workspace.RunOperatorOnce(core.CreateOperator(
                'CreateDB', [], ['reader'], db=model['model_file'], db_type='minidb'))
            workspace.RunOperatorOnce(core.CreateOperator(
                'Load', ['reader'], params, load_all=1, add_prefix=scope_name + '/',
                strip_prefix='gpu_0/'))
            logger.info('Model {} is loaded from a checkpoint {}'.format(
                scope_name, model['model_file']))

    def decode(self, numberized_input, max_output_seq_len):
        """Translates one sentence (source ids) in max_output_seq_len steps.
        Returns (target ids of the best hypothesis, its attention weights per
        token over the source, its cost: minus its log-probability)."""
        workspace.FeedBlob(self.encoder_inputs, np.array(
            [[token] for token in reversed(numberized_input)], dtype=np.int32))
        workspace.FeedBlob(self.encoder_lengths,
                           np.array([len(numberized_input)], dtype=np.int32))
        workspace.FeedBlob(self.max_output_seq_len,
                           np.array([max_output_seq_len], dtype=np.int64))
        workspace.RunNet(self.model.net)
        scores = workspace.FetchBlob(self.output_score_beam_list)
        tokens = workspace.FetchBlob(self.output_token_beam_list)
        predecessors = workspace.FetchBlob(self.output_prev_index_beam_list)
        attention = workspace.FetchBlob(self.output_attention_weights_beam_list)
        # The best hypothesis that ended (EOS) or ran to the last step.
        best = (max_output_seq_len, 0)
        for step in range(max_output_seq_len + 1):
            for k in range(self.beam_size):
                finished = tokens[step][k][0] == seq2seq_util.EOS_ID or (
                    step == max_output_seq_len)
                if finished and scores[step][k][0] > scores[best[0]][best[1]][0]:
                    best = (step, k)
        step, k = best
        best_score = -scores[step][k][0]
        output, weights = [], []
        while step > 0:
            output.append(tokens[step][k][0])
            weights.append(attention[step][k])
            k = predecessors[step][k][0]
            step -= 1
        # The encoder read the source reversed.
        weights = [list(reversed(w))[:len(numberized_input)] for w in reversed(weights)]
        return list(reversed(output)), weights, best_score


def run_seq2seq_beam_decoder(args, model_params, decoding_params):
    source_vocab = seq2seq_util.gen_vocab(args.source_corpus, args.unk_threshold)
    logger.info('Source vocab size {}'.format(len(source_vocab)))
    target_vocab = seq2seq_util.gen_vocab(args.target_corpus, args.unk_threshold)
    words = {i: token for token, i in target_vocab.items()}
    logger.info('Target vocab size {}'.format(len(target_vocab)))
    decoder = Seq2SeqModelCaffe2EnsembleDecoder(translate_params=dict(
        ensemble_models=[dict(source_vocab=source_vocab, target_vocab=target_vocab,
                              model_params=model_params, model_file=args.checkpoint)],
        decoding_params=decoding_params))
    decoder.load_models()
    for line in sys.stdin:
        source = seq2seq_util.get_numberized_sentence(line, source_vocab)
        translation, _, _ = decoder.decode(source, 2 * len(source) + 5)
        print(' '.join(words[token] for token in translation))


def main(argv=None):
    from doppio.models.seq2seq.train import add_model_arguments, model_params_from_args
    parser = argparse.ArgumentParser(description='Caffe2: Seq2Seq Translation')
    parser.add_argument('--source-corpus', required=True,
                        help='source sentences the vocabulary was built from')
    parser.add_argument('--target-corpus', required=True,
                        help='target sentences the vocabulary was built from')
    parser.add_argument('--unk-threshold', type=int, default=50,
                        help='tokens seen this often or less become UNK')
    parser.add_argument('--beam-size', type=int, default=6, help='beam size')
    parser.add_argument('--word-reward', type=float, default=0.0, help='reward per word')
    parser.add_argument('--unk-reward', type=float, default=0.0,
                        help='extra reward per UNK (usually negative)')
    parser.add_argument('--checkpoint', required=True, help='checkpoint path')
    add_model_arguments(parser)
    args = parser.parse_args(argv)
    run_seq2seq_beam_decoder(
        args, model_params=model_params_from_args(args),
        decoding_params=dict(beam_size=args.beam_size, word_reward=args.word_reward,
                             unk_reward=args.unk_reward))


if __name__ == '__main__':
    main()
