"""Training of Caffe2's sequence-to-sequence model
(caffe2.python.models.seq2seq.train): batching of numberized sentence
pairs, Seq2SeqModelCaffe2 (an embedding LSTM encoder, an attention LSTM
decoder, softmax loss per target word, SGD with global gradient-norm
clipping, on the CPU or data-parallel over GPUs), checkpoints, and the
command line of Caffe2's trainer:

    python -m doppio.models.seq2seq.train --source-corpus S --target-corpus T \\
        --source-corpus-eval S2 --target-corpus-eval T2 [--use-attention] ...
"""
import argparse
import collections
import logging
import math
import os
import random
import sys
import time

import numpy as np

from doppio import core, data_parallel_model, workspace
from doppio.models.seq2seq import seq2seq_util
from doppio.models.seq2seq.seq2seq_model_helper import Seq2SeqModelHelper
from doppio.proto import doppio_pb2

logger = logging.getLogger(__name__)
logger.setLevel(logging.INFO)
logger.addHandler(logging.StreamHandler(sys.stderr))

Batch = collections.namedtuple('Batch', ['encoder_inputs', 'encoder_lengths', 'decoder_inputs',
                                         'decoder_lengths', 'targets', 'target_weights'])


def prepare_batch(batch):
    """Time-major arrays of a list of (source ids, target ids) pairs: each
    source reversed and padded, the decoder reading GO + target, the targets
    target + EOS, weights 1 on real target positions (all 0 for an empty
    pair)."""
    max_source = max(len(source) for source, _ in batch)
    max_target = max(len(target) for _, target in batch)
    columns = collections.defaultdict(list)
    for source, target in batch:
        target_pads = [seq2seq_util.PAD_ID] * (max_target - len(target))
        columns['encoder_inputs'].append(
            list(reversed(source)) + [seq2seq_util.PAD_ID] * (max_source - len(source)))
        columns['encoder_lengths'].append(len(source))
        columns['decoder_inputs'].append([seq2seq_util.GO_ID] + target + target_pads)
        columns['decoder_lengths'].append(len(target) + 1)
        targets = target + [seq2seq_util.EOS_ID] + target_pads
        columns['targets'].append(targets)
        empty = len(source) + len(target) == 0
        columns['target_weights'].append(
            [0 if empty or t == seq2seq_util.PAD_ID else 1 for t in targets])
    time_major = {'encoder_inputs', 'decoder_inputs', 'targets', 'target_weights'}
    return Batch(**{
        name: (np.array(columns[name], dtype=np.float32 if name == 'target_weights'
                        else np.int32).T if name in time_major
               else np.array(columns[name], dtype=np.int32))
        for name in Batch._fields})


class Seq2SeqModelCaffe2(object):
    """The trainer's model. model_params: attention ('none', 'regular'),
    encoder_type (encoder_layer_configs, use_bidirectional_encoder),
    decoder_layer_configs, encoder/decoder_embedding_size,
    decoder_softmax_size, batch_size, optimizer_params (learning_rate),
    max_gradient_norm. self.model trains; self.forward_net computes the loss
    only."""

    def __init__(self, model_params, source_vocab_size, target_vocab_size, num_gpus=1,
                 num_cpus=1):
        self.model_params = model_params
        self.encoder_type = 'rnn'
        self.encoder_params = model_params['encoder_type']
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.num_gpus = num_gpus
        self.num_cpus = num_cpus
        self.batch_size = model_params['batch_size']
        workspace.GlobalInit(['caffe2', '--caffe2_log_level=0', '--v=0',
                              '--caffe2_handle_executor_threads_exceptions=1',
                              '--caffe2_mkl_num_threads=' + str(self.num_cpus)])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        workspace.ResetWorkspace()

    def _build_model(self, init_params):
        model = Seq2SeqModelHelper(init_params=init_params)
        forward_model = Seq2SeqModelHelper(init_params=init_params)
        for m in (model, forward_model):
            self._build_shared(m)
            self._build_embeddings(m)
        if self.num_gpus == 0:
            model.AddGradientOperators(self.model_build_fun(model))
            self.norm_clipped_grad_update(model, scope='norm_clipped_grad_update')
            self.forward_model_build_fun(forward_model)
        else:
            if self.batch_size % self.num_gpus:
                raise ValueError('batch_size {} does not split over {} GPUs'.format(
                    self.batch_size, self.num_gpus))
            devices = list(range(self.num_gpus))
            data_parallel_model.Parallelize_GPU(
                forward_model, input_builder_fun=lambda m: None,
                forward_pass_builder_fun=self.forward_model_build_fun,
                param_update_builder_fun=None, devices=devices)
            data_parallel_model.Parallelize_GPU(
                model, input_builder_fun=lambda m: None,
                forward_pass_builder_fun=self.model_build_fun,
                param_update_builder_fun=lambda m: self.norm_clipped_grad_update(
                    m, scope='norm_clipped_grad_update'),
                devices=devices)
        self.norm_clipped_sparse_grad_update(model, scope='norm_clipped_sparse_grad_update')
        self.model = model
        self.forward_net = forward_model.net

    def _build_shared(self, model):
        with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU)):
            rate = float(self.model_params['optimizer_params']['learning_rate'])
            self.learning_rate = model.AddParam(name='learning_rate', init_value=rate,
                                                trainable=False)
            self.global_step = model.AddParam(name='global_step', init_value=0,
                                              trainable=False)
            self.start_time = model.AddParam(name='start_time', init_value=time.time(),
                                             trainable=False)

    def _build_embeddings(self, model):
        # Embedding tables stay on the CPU (sparse updates, Gather there).
        with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU)):
            bound = math.sqrt(3)
            for side, vocab_size in (('encoder', self.source_vocab_size),
                                     ('decoder', self.target_vocab_size)):
                table = model.param_init_net.UniformFill(
                    [], side + '_embeddings',
                    shape=[vocab_size, self.model_params[side + '_embedding_size']],
                    min=-bound, max=bound)
                model.params.append(table)
                setattr(self, side + '_embeddings', table)

    def model_build_fun(self, model, forward_only=False, loss_scale=None):
        """The model on one device; returns [the summed word loss / batch]."""
        names = ('encoder_inputs', 'encoder_lengths', 'decoder_inputs', 'decoder_lengths',
                 'targets', 'target_weights')
        (encoder_inputs, encoder_lengths, decoder_inputs, decoder_lengths, targets,
         target_weights) = [model.net.AddExternalInput(workspace.GetNameScope() + name)
                            for name in names]
        attention_type = self.model_params['attention']
        if attention_type not in ('none', 'regular', 'dot'):
            raise ValueError('unknown attention {!r}'.format(attention_type))
        (encoder_outputs, weighted_encoder_outputs, final_hidden_states, final_cell_states,
         encoder_units_per_layer) = seq2seq_util.build_embedding_encoder(
             model=model, encoder_params=self.encoder_params,
             num_decoder_layers=len(self.model_params['decoder_layer_configs']),
             inputs=encoder_inputs, input_lengths=encoder_lengths,
             vocab_size=self.source_vocab_size, embeddings=self.encoder_embeddings,
             embedding_size=self.model_params['encoder_embedding_size'],
             use_attention=attention_type != 'none', num_gpus=self.num_gpus)
        decoder_outputs, decoder_output_size = seq2seq_util.build_embedding_decoder(
            model, decoder_layer_configs=self.model_params['decoder_layer_configs'],
            inputs=decoder_inputs, input_lengths=decoder_lengths,
            encoder_lengths=encoder_lengths, encoder_outputs=encoder_outputs,
            weighted_encoder_outputs=weighted_encoder_outputs,
            final_encoder_hidden_states=final_hidden_states,
            final_encoder_cell_states=final_cell_states,
            encoder_units_per_layer=encoder_units_per_layer,
            vocab_size=self.target_vocab_size, embeddings=self.decoder_embeddings,
            embedding_size=self.model_params['decoder_embedding_size'],
            attention_type=attention_type, forward_only=False, num_gpus=self.num_gpus)
        logits = seq2seq_util.output_projection(
            model=model, decoder_outputs=decoder_outputs,
            decoder_output_size=decoder_output_size, target_vocab_size=self.target_vocab_size,
            decoder_softmax_size=self.model_params['decoder_softmax_size'])
        targets, _ = model.net.Reshape([targets], ['targets', 'targets_old_shape'], shape=[-1])
        target_weights, _ = model.net.Reshape(
            [target_weights], ['target_weights', 'target_weights_old_shape'], shape=[-1])
        _, loss_per_word = model.net.SoftmaxWithLoss(
            [logits, targets, target_weights], ['OutputProbs_INVALID', 'loss_per_word'],
            only_loss=True)
        # SoftmaxWithLoss averages over the weights; times their sum is the
        # summed loss.
        num_words = model.net.SumElements([target_weights], 'num_words')
        total = model.net.Mul([loss_per_word, num_words], 'total_loss_scalar')
        return [model.net.Scale([total], 'total_loss_scalar_weighted',
                                scale=1.0 / self.batch_size)]

    def forward_model_build_fun(self, model, loss_scale=None):
        return self.model_build_fun(model=model, forward_only=True, loss_scale=loss_scale)

    def _calc_norm_ratio(self, model, params, scope, ONE):
        """clip_norm / max(global gradient norm, clip_norm): 1 unless the
        gradients' global L2 norm exceeds max_gradient_norm."""
        with core.NameScope(scope):
            squared_sums = []
            for i, param in enumerate(params):
                logger.info(param)
                grad = model.param_to_grad[param]
                if isinstance(grad, core.GradientSlice):
                    grad = grad.values
                squared = model.net.Sqr([grad], 'grad_{}_squared'.format(i))
                squared_sums.append(model.net.SumElements(squared,
                                                          'grad_{}_squared_sum'.format(i)))
            full_sum = model.net.Sum(squared_sums, 'grad_squared_full_sum')
            global_norm = model.net.Pow(full_sum, 'global_norm', exponent=0.5)
            clip_norm = model.param_init_net.ConstantFill(
                [], 'clip_norm', shape=[], value=float(self.model_params['max_gradient_norm']))
            max_norm = model.net.Max([global_norm, clip_norm], 'max_norm')
            return model.net.Div([clip_norm, max_norm], 'norm_ratio')

    def _apply_norm_ratio(self, norm_ratio, model, params, learning_rate, scope, ONE):
        """param += -learning_rate * norm_ratio * grad (rows only for a
        sparse gradient)."""
        for param in params:
            grad = model.param_to_grad[param]
            negative_rate = model.net.Negative([learning_rate], 'negative_learning_rate')
            with core.NameScope(scope):
                coefficient = model.net.Mul([negative_rate, norm_ratio], 'update_coeff',
                                            broadcast=1)
            if isinstance(grad, core.GradientSlice):
                model.net.ScatterWeightedSum(
                    [param, ONE, grad.indices, grad.values, coefficient], param)
            else:
                model.net.WeightedSum([param, ONE, grad, coefficient], param)

    def _clipped_update(self, model, scope, sparse, learning_rate):
        params = [p for p in model.GetParams(top_scope=True) if p in model.param_to_grad and
                  isinstance(model.param_to_grad[p], core.GradientSlice) == sparse]
        ONE = model.param_init_net.ConstantFill([], 'ONE', shape=[1], value=1.0)
        logger.info('%s trainable variables: ', 'Sparse' if sparse else 'Dense')
        norm_ratio = self._calc_norm_ratio(model, params, scope, ONE)
        self._apply_norm_ratio(norm_ratio, model, params, learning_rate, scope, ONE)

    def norm_clipped_grad_update(self, model, scope):
        """The dense parameters' SGD step, clipped by their global norm."""
        learning_rate = (self.learning_rate if self.num_gpus == 0
                         else model.CopyCPUToGPU(self.learning_rate, 'LR'))
        self._clipped_update(model, scope, sparse=False, learning_rate=learning_rate)

    def norm_clipped_sparse_grad_update(self, model, scope):
        """The embedding tables' (sparse gradients) SGD step, clipped alike."""
        self._clipped_update(model, scope, sparse=True, learning_rate=self.learning_rate)

    def total_loss_scalar(self):
        if self.num_gpus == 0:
            return workspace.FetchBlob('total_loss_scalar')
        return sum(workspace.FetchBlob('gpu_{}/total_loss_scalar'.format(i))
                   for i in range(self.num_gpus))

    def _init_model(self):
        workspace.RunNetOnce(self.model.param_init_net)
        for net in (self.model.net, self.forward_net):
            workspace.CreateNet(net, input_blobs=[str(i) for i in net.external_inputs])

    def initialize_from_scratch(self):
        logger.info('Initializing Seq2SeqModelCaffe2 from scratch: Start')
        self._build_model(init_params=True)
        self._init_model()
        logger.info('Initializing Seq2SeqModelCaffe2 from scratch: Finish')

    def get_current_step(self):
        return workspace.FetchBlob(self.global_step)[0]

    def inc_current_step(self):
        workspace.FeedBlob(self.global_step, np.array([self.get_current_step() + 1]))

    def step(self, batch, forward_only):
        """Feeds a batch of (source ids, target ids) pairs (split over the
        GPUs), runs a training step (or only the loss) and returns the
        summed loss."""
        if self.num_gpus < 1:
            for name, value in zip(Batch._fields, prepare_batch(batch)):
                workspace.FeedBlob(name, value)
        else:
            for i in range(self.num_gpus):
                for name, value in zip(Batch._fields, prepare_batch(batch[i::self.num_gpus])):
                    # Token ids feed the CPU embedding lookups.
                    device = (core.DeviceOption(doppio_pb2.CPU)
                              if name in ('encoder_inputs', 'decoder_inputs')
                              else core.DeviceOption(doppio_pb2.CUDA, i))
                    workspace.FeedBlob('gpu_{}/{}'.format(i, name), value, device_option=device)
        if forward_only:
            workspace.RunNet(self.forward_net)
        else:
            workspace.RunNet(self.model.net)
            self.inc_current_step()
        return self.total_loss_scalar()

    def save(self, checkpoint_path_prefix, current_step):
        """Saves every parameter to the minidb '<prefix>-<step>' and names it
        in the folder's 'checkpoint' file (TensorFlow's format, as Caffe2's
        trainer writes it); returns the path."""
        checkpoint_path = '{0}-{1}'.format(checkpoint_path_prefix, current_step)
        workspace.RunOperatorOnce(core.CreateOperator(
            'Save', self.model.GetAllParams(), [], absolute_path=True, db=checkpoint_path,
            db_type='minidb'))
        config = os.path.join(os.path.dirname(checkpoint_path_prefix), 'checkpoint')
        with open(config, 'w') as f:
            f.write('model_checkpoint_path: "{0}"\nall_model_checkpoint_paths: "{0}"\n'.format(
                checkpoint_path))
        logger.info('Saved checkpoint file to ' + checkpoint_path)
        return checkpoint_path


def gen_batches(source_corpus, target_corpus, source_vocab, target_vocab, batch_size,
                max_length):
    """Batches of batch_size numberized pairs from parallel corpora (pairs
    with an empty side or longer than max_length dropped), sorted by length
    so a batch pads little, the last filled up by repeating its last pair,
    then shuffled."""
    pairs = []
    with open(source_corpus) as source, open(target_corpus) as target:
        for source_line, target_line in zip(source, target):
            source_ids = seq2seq_util.get_numberized_sentence(source_line, source_vocab)
            target_ids = seq2seq_util.get_numberized_sentence(target_line, target_vocab)
            if source_ids and target_ids and (max_length is None or (
                    len(source_ids) <= max_length and len(target_ids) <= max_length)):
                pairs.append((source_ids, target_ids))
    pairs.sort(key=lambda pair: (len(pair[0]), len(pair[1])))
    batches = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
    if batches:
        batches[-1] += [batches[-1][-1]] * (batch_size - len(batches[-1]))
    random.shuffle(batches)
    return batches


def run_seq2seq_model(args, model_params=None):
    source_vocab = seq2seq_util.gen_vocab(args.source_corpus, args.unk_threshold)
    target_vocab = seq2seq_util.gen_vocab(args.target_corpus, args.unk_threshold)
    logger.info('Source vocab size {}'.format(len(source_vocab)))
    logger.info('Target vocab size {}'.format(len(target_vocab)))
    batch_size = model_params['batch_size']
    batches = gen_batches(args.source_corpus, args.target_corpus, source_vocab, target_vocab,
                          batch_size, args.max_length)
    logger.info('Number of training batches {}'.format(len(batches)))
    batches_eval = gen_batches(args.source_corpus_eval, args.target_corpus_eval, source_vocab,
                               target_vocab, batch_size, args.max_length)
    logger.info('Number of eval batches {}'.format(len(batches_eval)))
    with Seq2SeqModelCaffe2(model_params=model_params, source_vocab_size=len(source_vocab),
                            target_vocab_size=len(target_vocab), num_gpus=args.num_gpus,
                            num_cpus=20) as model_obj:
        model_obj.initialize_from_scratch()
        for epoch in range(args.epochs):
            logger.info('Epoch {}'.format(epoch))
            loss = sum(model_obj.step(batch=b, forward_only=False) for b in batches)
            logger.info('\ttraining loss {}'.format(loss))
            loss = sum(model_obj.step(batch=b, forward_only=True) for b in batches_eval)
            logger.info('\teval loss {}'.format(loss))
            if args.checkpoint is not None:
                model_obj.save(args.checkpoint, epoch)


def add_model_arguments(parser):
    """The model-shape flags the trainer and translate share."""
    parser.add_argument('--use-bidirectional-encoder', action='store_true',
                        help='bidirectional first encoder layer')
    parser.add_argument('--use-attention', action='store_true', help='attention decoder')
    parser.add_argument('--encoder-cell-num-units', type=int, default=512,
                        help='cell units per encoder layer')
    parser.add_argument('--encoder-num-layers', type=int, default=2, help='encoder layers')
    parser.add_argument('--decoder-cell-num-units', type=int, default=512,
                        help='cell units per decoder layer')
    parser.add_argument('--decoder-num-layers', type=int, default=2, help='decoder layers')
    parser.add_argument('--encoder-embedding-size', type=int, default=256,
                        help='encoder embedding size')
    parser.add_argument('--decoder-embedding-size', type=int, default=512,
                        help='decoder embedding size')
    parser.add_argument('--decoder-softmax-size', type=int, default=None,
                        help='size of an FC before the output softmax')


def model_params_from_args(args):
    """model_params from add_model_arguments' flags (a bidirectional first
    layer has half the units each way)."""
    encoder_units = args.encoder_cell_num_units
    if args.use_bidirectional_encoder and encoder_units % 2:
        raise ValueError('--encoder-cell-num-units must be even with a bidirectional encoder')
    encoder_layers = [dict(num_units=encoder_units) for _ in range(args.encoder_num_layers)]
    if args.use_bidirectional_encoder and encoder_layers:
        encoder_layers[0]['num_units'] = encoder_units // 2
    return dict(
        attention='regular' if args.use_attention else 'none',
        decoder_layer_configs=[dict(num_units=args.decoder_cell_num_units)
                               for _ in range(args.decoder_num_layers)],
        encoder_type=dict(encoder_layer_configs=encoder_layers,
                          use_bidirectional_encoder=args.use_bidirectional_encoder),
        encoder_embedding_size=args.encoder_embedding_size,
        decoder_embedding_size=args.decoder_embedding_size,
        decoder_softmax_size=args.decoder_softmax_size)


def main(argv=None):
    random.seed(31415)
    parser = argparse.ArgumentParser(description='Caffe2: Seq2Seq Training')
    parser.add_argument('--source-corpus', required=True,
                        help='source sentences, one per line')
    parser.add_argument('--target-corpus', required=True,
                        help='target sentences, one per line')
    parser.add_argument('--max-length', type=int, default=None,
                        help='longest sentence trained and evaluated')
    parser.add_argument('--unk-threshold', type=int, default=50,
                        help='tokens seen this often or less become UNK')
    parser.add_argument('--batch-size', type=int, default=32, help='training batch size')
    parser.add_argument('--epochs', type=int, default=10, help='passes over the data')
    parser.add_argument('--learning-rate', type=float, default=0.5, help='learning rate')
    parser.add_argument('--max-gradient-norm', type=float, default=1.0,
                        help='clip the gradients\' global norm to this')
    parser.add_argument('--num-gpus', type=int, default=0, help='GPUs (0: the CPU)')
    parser.add_argument('--source-corpus-eval', required=True, help='source eval sentences')
    parser.add_argument('--target-corpus-eval', required=True, help='target eval sentences')
    parser.add_argument('--checkpoint', default=None, help='checkpoint path prefix')
    add_model_arguments(parser)
    args = parser.parse_args(argv)
    params = model_params_from_args(args)
    params.update(batch_size=args.batch_size,
                  optimizer_params=dict(learning_rate=args.learning_rate),
                  max_gradient_norm=args.max_gradient_norm)
    run_seq2seq_model(args, model_params=params)


if __name__ == '__main__':
    main()
