"""python_api/examples/fmnist_train.py --model mlp on part of Fashion-MNIST,
data-parallel on 2 CPU devices: the reference MLP (FC 784-256-128-10 with
Relu) learns, its replicas stay identical, and the exported predict net,
scored by the real run_net binary, agrees with training's accuracy and
matches a numpy forward pass of the trained weights.
"""
import os
import sys

import numpy as np
import pytest

from caffe2.proto import caffe2_pb2
from caffe2.python import workspace
from python_api.examples import fmnist_train as example
from tests.examples.example_tools import tools_dir

TRAIN_IMAGES = 3200
TEST_IMAGES = 1000
DEVICES = 2
MLP_PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b', 'pred_w', 'pred_b']


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('fmnist_mlp'))
    summary = example.main([
        '--model', 'mlp', '--epochs', '2', '--train_limit', str(TRAIN_IMAGES),
        '--test_limit', str(TEST_IMAGES), '--workdir', workdir, '--tools_dir', tools_dir(),
        '--no_progress', '--db_type', 'minidb', '--devices', str(DEVICES)])
    return workdir, summary


def load_net(path):
    net = caffe2_pb2.NetDef()
    with open(path, 'rb') as f:
        net.ParseFromString(f.read())
    return net


def test_it_learns(run):
    _, summary = run
    losses = np.array(summary['losses'])
    assert losses.shape == (2 * (TRAIN_IMAGES // 64),)
    assert np.isfinite(losses).all()
    # Chance is ln(10) = 2.30 and 10%. The MLP on 3,200 images reaches
    # ~0.75-0.80 after 2 epochs (the CNN's test uses 0.6 for the same data).
    assert losses[0] > 2.0
    assert losses[-20:].mean() < 1.0
    assert summary['final_test_accuracy'] >= 0.65
    assert summary['model'] == 'mlp'


def test_the_net_is_the_reference_mlp(run):
    # Weights as brew's FC stores them: [out, in].
    shapes = {name: workspace.FetchBlob('cpu_0/' + name).shape for name in MLP_PARAMS}
    assert shapes == {'fc1_w': (256, 784), 'fc1_b': (256,), 'fc2_w': (128, 256),
                      'fc2_b': (128,), 'pred_w': (10, 128), 'pred_b': (10,)}
    workdir, _ = run
    predict = load_net(os.path.join(workdir, 'predict_net.pb'))
    types = [op.type for op in predict.op]
    assert types.count('FC') == 3 and types.count('Relu') == 2
    assert not [t for t in types if t.startswith('Conv') or t == 'SpatialBN']


def test_replicas_agree_and_checkpoint_holds_device_0(run):
    _, summary = run
    saved = set(summary['checkpoint_blobs'])
    for name in MLP_PARAMS:
        assert 'cpu_0/' + name in saved and 'cpu_0/' + name + '_momentum' in saved
        np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/' + name),
                                      workspace.FetchBlob('cpu_0/' + name), err_msg=name)


def test_run_net_scores_the_exported_net_like_numpy(run):
    workdir, summary = run
    assert abs(summary['run_net_test_accuracy'] - summary['final_test_accuracy']) <= 1e-3
    # An independent forward pass of the exported weights in numpy.
    init = load_net(os.path.join(workdir, 'init_net.pb'))
    values = {}
    for op in init.op:
        args = {a.name: a for a in op.arg}
        if 'values' in args:
            shape = list(args['shape'].ints)
            values[op.output[0]] = np.array(args['values'].floats, np.float32).reshape(shape)
    x, y = example.read_idx(example.parse_args(['--test_limit', str(TEST_IMAGES)]), 'test',
                            TEST_IMAGES)
    h = (x.reshape(len(x), -1).astype(np.float64) / 255.0 - example.PIXEL_MEAN) / \
        example.PIXEL_STD
    for layer in ('fc1', 'fc2'):
        h = np.maximum(h @ values[layer + '_w'].T + values[layer + '_b'], 0)
    logits = h @ values['pred_w'].T + values['pred_b']
    numpy_accuracy = float(np.mean(logits.argmax(axis=1) == y))
    # float32 in Doppio vs float64 here: a few borderline images may differ.
    assert abs(numpy_accuracy - summary['run_net_test_accuracy']) <= 3.0 / TEST_IMAGES


def test_devices_auto_trains_with_the_split_it_measured_fastest(tmp_path, capsys):
    summary = example.main([
        '--model', 'mlp', '--devices', 'auto', '--epochs', '1', '--train_limit', '1280',
        '--test_limit', '200', '--workdir', str(tmp_path), '--tools_dir', tools_dir(),
        '--no_progress', '--db_type', 'minidb', '--plot', str(tmp_path / 'curves.png')])
    # --plot puts the loss and accuracy curves where it is told, not in WORKDIR.
    with open(str(tmp_path / 'curves.png'), 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    assert not os.path.exists(str(tmp_path / 'loss.png'))
    chosen = summary['auto_split']
    rates = chosen['img_per_s']
    cores = os.cpu_count()
    # Every candidate uses each core once; each was timed in every round.
    assert '{} device{} x 1 thread'.format(cores, 's' if cores > 1 else '') in rates
    assert all(len(r) == example.AUTO_ROUNDS and min(r) > 0 for r in rates.values())
    assert chosen['picked'] == max(rates, key=lambda name: max(rates[name]))
    threads = summary['num_threads_per_device'] * summary['intra_op_threads']
    assert summary['devices'] * threads == cores
    assert 'auto split: picked ' + chosen['picked'] in capsys.readouterr().out
    assert summary['final_test_accuracy'] > 0.4


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
