"""Caffe2's seq2seq programs (doppio.models.seq2seq: seq2seq_util, train,
beam_search, translate). The beam search and the training net are two
different graphs over the same checkpoint: the cost beam search reports
for its best translation must equal the training net's summed loss on that
translation. Batching is checked against hand-made arrays, clipping
against numpy, and the trainer and translator run as the command-line
programs they are."""
import os
import subprocess
import sys

import numpy as np
import pytest

from doppio import core, workspace
from doppio.models.seq2seq import seq2seq_util
from doppio.models.seq2seq.train import Seq2SeqModelCaffe2, gen_batches, prepare_batch
from doppio.models.seq2seq.translate import Seq2SeqModelCaffe2EnsembleDecoder

VOCAB = 20


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def test_prepare_batch_is_time_major_reversed_and_padded():
    batch = prepare_batch([([5, 6, 7], [8, 9]), ([4], [10, 11, 12])])
    np.testing.assert_array_equal(batch.encoder_inputs.T, [[7, 6, 5], [4, 0, 0]])
    np.testing.assert_array_equal(batch.encoder_lengths, [3, 1])
    np.testing.assert_array_equal(batch.decoder_inputs.T, [[1, 8, 9, 0], [1, 10, 11, 12]])
    np.testing.assert_array_equal(batch.decoder_lengths, [3, 4])
    np.testing.assert_array_equal(batch.targets.T, [[8, 9, 2, 0], [10, 11, 12, 2]])
    np.testing.assert_array_equal(batch.target_weights.T, [[1, 1, 1, 0], [1, 1, 1, 1]])
    assert batch.encoder_inputs.dtype == np.int32 and batch.target_weights.dtype == np.float32


def test_vocabulary_and_batches_from_corpora(tmp_path):
    source, target = tmp_path / 'src.txt', tmp_path / 'tgt.txt'
    source.write_text('a b a\nb c\na a a a a\n\n')
    target.write_text('x y\ny\nx x x x x\nz\n')
    vocab = seq2seq_util.gen_vocab(str(source), unk_threshold=1)
    assert [vocab[t] for t in ('<PAD>', '<GO>', '<EOS>', '<UNK>')] == [0, 1, 2, 3]
    assert set(vocab) == {'<PAD>', '<GO>', '<EOS>', '<UNK>', 'a', 'b'}  # c is seen once
    assert seq2seq_util.get_numberized_sentence('a c b', vocab) == [vocab['a'], 3, vocab['b']]
    target_vocab = seq2seq_util.gen_vocab(str(target), unk_threshold=0)
    batches = gen_batches(str(source), str(target), vocab, target_vocab, batch_size=3,
                          max_length=4)
    # The empty source line and the 5-token pair are dropped; the pairs are
    # sorted by length and the short batch is filled up with its last pair.
    short = (seq2seq_util.get_numberized_sentence('b c', vocab), [target_vocab['y']])
    longer = (seq2seq_util.get_numberized_sentence('a b a', vocab),
              [target_vocab['x'], target_vocab['y']])
    assert batches == [[short, longer, longer]]


MODEL_PARAMS = dict(
    attention='regular',
    decoder_layer_configs=[dict(num_units=16), dict(num_units=16)],
    encoder_type=dict(encoder_layer_configs=[dict(num_units=8), dict(num_units=16)],
                      use_bidirectional_encoder=True),
    encoder_embedding_size=8, decoder_embedding_size=8, decoder_softmax_size=None)


def train_model(tmp_path, model_params, batch_size=2, learning_rate=0.1):
    model = Seq2SeqModelCaffe2(
        dict(model_params, batch_size=batch_size,
             optimizer_params=dict(learning_rate=learning_rate), max_gradient_norm=1.0),
        VOCAB, VOCAB, num_gpus=0)
    model.initialize_from_scratch()
    return model, model.save(checkpoint_path_prefix=str(tmp_path / 'checkpoint'),
                             current_step=0)


def decoder_for(checkpoints, model_params, beam_size=3):
    vocab = {i: str(i) for i in range(VOCAB)}
    decoder = Seq2SeqModelCaffe2EnsembleDecoder(dict(
        ensemble_models=[dict(source_vocab=vocab, target_vocab=vocab, model_params=model_params,
                              model_file=path) for path in checkpoints],
        decoding_params=dict(beam_size=beam_size, word_reward=0, unk_reward=0)))
    decoder.load_models()
    return decoder


def training_cost(model, source, targets):
    """The training forward net's summed loss of translating `source` into
    `targets` (batch of one)."""
    for name, value in zip(
            ('encoder_inputs', 'encoder_lengths', 'decoder_inputs', 'decoder_lengths',
             'targets', 'target_weights'),
            (np.array([list(reversed(source))], np.int32).T, np.int32([len(source)]),
             np.array([[seq2seq_util.GO_ID] + targets[:-1]], np.int32).T,
             np.int32([len(targets)]), np.array([targets], np.int32).T,
             np.ones((len(targets), 1), np.float32))):
        workspace.FeedBlob(name, value)
    workspace.RunNet(model.forward_net)
    return float(workspace.FetchBlob('total_loss_scalar'))


@pytest.mark.parametrize('model_params', [
    MODEL_PARAMS,
    dict(MODEL_PARAMS, decoder_layer_configs=[dict(num_units=16)] * 3,
         encoder_type=dict(encoder_layer_configs=[dict(num_units=16)],
                           use_bidirectional_encoder=False)),
    dict(MODEL_PARAMS, attention='none', decoder_softmax_size=6),
], ids=['2layer_attention', 'multi_decoder', 'no_attention'])
def test_beam_search_cost_equals_the_training_nets_loss(tmp_path, model_params):
    model, checkpoint = train_model(tmp_path, model_params)
    decoder = decoder_for([checkpoint], model_params)
    rng = np.random.RandomState(4)
    for _ in range(3):
        source = list(rng.randint(3, VOCAB, size=5))
        targets, attention, cost = decoder.decode(source, 7)
        assert decoder.decode(source, 7)[0] == targets  # deterministic
        assert 1 <= len(targets) <= 7 and len(attention) == len(targets)
        assert all(len(weights) == len(source) for weights in attention)
        np.testing.assert_allclose(cost, training_cost(model, source, targets), rtol=1e-4,
                                   atol=1e-4)


def test_an_ensemble_of_one_model_twice_decodes_as_the_model(tmp_path):
    _, checkpoint = train_model(tmp_path, MODEL_PARAMS)
    source = [5, 9, 4, 17]
    single = decoder_for([checkpoint], MODEL_PARAMS).decode(source, 6)
    workspace.ResetWorkspace()
    double = decoder_for([checkpoint, checkpoint], MODEL_PARAMS).decode(source, 6)
    assert single[0] == double[0]
    np.testing.assert_allclose(single[2], double[2], rtol=1e-5)


def test_training_step_is_sgd_clipped_to_the_global_norm(tmp_path):
    """One step: every dense parameter moves by -lr * min(1, clip / norm) *
    grad, the embeddings (sparse gradients) by their own clipped rows."""
    model, _ = train_model(tmp_path, MODEL_PARAMS, learning_rate=0.5)
    dense = [p for p in model.model.GetParams(top_scope=True)
             if p in model.model.param_to_grad and
             not isinstance(model.model.param_to_grad[p], core.GradientSlice)]
    assert len(dense) > 10
    before = {p: workspace.FetchBlob(str(p)).copy() for p in dense}
    loss = model.step([([4, 5, 6], [7, 8]), ([9, 10], [11, 12, 13])], forward_only=False)
    assert np.isfinite(loss) and model.get_current_step() == 1
    grads = {p: workspace.FetchBlob(str(model.model.param_to_grad[p])) for p in dense}
    norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads.values()))
    ratio = 1.0 / max(norm, 1.0)
    for p in dense:
        np.testing.assert_allclose(workspace.FetchBlob(str(p)),
                                   before[p] - 0.5 * ratio * grads[p], rtol=1e-4, atol=1e-6,
                                   err_msg=str(p))


def test_training_lowers_the_loss_of_a_copy_task(tmp_path):
    model, _ = train_model(tmp_path, dict(MODEL_PARAMS, decoder_layer_configs=[
        dict(num_units=16)]), batch_size=4, learning_rate=0.5)
    rng = np.random.RandomState(0)
    batch = [(list(s), list(s)) for s in rng.randint(4, 10, size=(4, 3))]
    first = model.step(batch, forward_only=True)
    for _ in range(30):
        model.step(batch, forward_only=False)
    assert model.step(batch, forward_only=True) < 0.5 * first


def run_module(module, args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, '-m', module] + args, input=stdin, cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=600)


def test_the_trainer_and_translator_command_lines(tmp_path):
    sentences = ['a b c', 'b c d', 'c d a', 'd a b', 'a c', 'b d']
    source = tmp_path / 'src.txt'
    source.write_text('\n'.join(sentences) + '\n')
    shape = ['--use-attention', '--encoder-cell-num-units', '8', '--encoder-num-layers', '1',
             '--decoder-cell-num-units', '8', '--decoder-num-layers', '1',
             '--encoder-embedding-size', '4', '--decoder-embedding-size', '4']
    corpora = ['--source-corpus', str(source), '--target-corpus', str(source),
               '--unk-threshold', '0']
    result = run_module('doppio.models.seq2seq.train', corpora + shape + [
        '--source-corpus-eval', str(source), '--target-corpus-eval', str(source),
        '--batch-size', '2', '--epochs', '2', '--checkpoint', str(tmp_path / 'ckpt')])
    assert result.returncode == 0, result.stderr
    assert 'eval loss' in result.stderr
    config = (tmp_path / 'checkpoint').read_text()
    assert 'model_checkpoint_path: "{}-1"'.format(tmp_path / 'ckpt') in config
    result = run_module('doppio.models.seq2seq.translate', corpora + shape + [
        '--checkpoint', str(tmp_path / 'ckpt-1'), '--beam-size', '2'], stdin='a b\nc d a\n')
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    words = {'a', 'b', 'c', 'd', '<EOS>', '<UNK>', '<PAD>', '<GO>'}
    assert all(set(line.split()) <= words for line in lines), lines


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs', '-p', 'no:cacheprovider']))
