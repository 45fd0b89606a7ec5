"""python_api/examples/fmnist_train.py as 2 shards started by tools/launch.py
(issue 7), on part of Fashion-MNIST: both processes exit 0, shard 0 alone
writes its outputs, the two shards end with identical replicas, and the
exported net scored by run_net agrees with the accuracy shard 0 measured in
training. The accuracy is checked against the labels by numpy here, from
the checkpoint's own weights, independently of the example's evaluation."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from caffe2.python import core, workspace
from python_api.examples import fmnist_train as example
from tests.examples.example_tools import tools_dir

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH = os.path.join(HERE, '..', '..', 'tools', 'launch.py')
TRAIN_IMAGES = 1280
TEST_IMAGES = 500
WALL_LIMIT_S = 240
# Blobs every replica updates identically from the allreduced gradients (BN
# running statistics are each device's own).
REPLICATED_SUFFIXES = ('_w', '_b', '_s', '_momentum', 'pixel_shift')


def load_minidb(path):
    """A checkpoint's blobs, loaded into a fresh workspace."""
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator(
        'Load', [], [], db=path, db_type='minidb', load_all=1, absolute_path=1))
    return {name: workspace.FetchBlob(name) for name in workspace.Blobs()}


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('fmnist_2_shards'))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for name in ('DOPPIO_RANK', 'DOPPIO_WORLD_SIZE', 'DOPPIO_STORE', 'DOPPIO_RUN_ID'):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, LAUNCH, '--nprocs', '2', example.__file__, '--devices', '1',
         '--epochs', '1', '--train_limit', str(TRAIN_IMAGES), '--test_limit',
         str(TEST_IMAGES), '--workdir', workdir, '--tools_dir', tools_dir(),
         '--no_progress', '--db_type', 'minidb', '--checkpoint_every_shard'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        env=env, timeout=WALL_LIMIT_S)
    return workdir, result


def test_both_shards_exit_0_and_only_shard_0_reports(run):
    workdir, result = run
    assert result.returncode == 0, result.stdout[-4000:]
    lines = result.stdout.splitlines()
    assert any(l.startswith('[rank 0] epoch 1: loss') for l in lines), result.stdout
    # Shard 1 trains silently: nothing on stdout but what the runtime logs.
    assert not [l for l in lines if l.startswith('[rank 1] epoch')]
    assert os.path.exists(os.path.join(workdir, 'summary.json'))
    assert os.path.exists(os.path.join(workdir, 'checkpoint_shard1.minidb'))


def test_summary_counts_global_steps(run):
    workdir, _ = run
    with open(os.path.join(workdir, 'summary.json')) as f:
        summary = json.load(f)
    assert summary['processes'] == 2 and summary['devices'] == 1
    # One loss per global step of 64 images, the same count on both shards
    # (else the collectives would deadlock or fail).
    assert len(summary['losses']) == TRAIN_IMAGES // 64
    assert summary['losses'][0] > 2.0
    assert summary['final_test_accuracy'] >= 0.5


def test_shards_end_with_identical_replicas(run):
    workdir, _ = run
    shard0 = load_minidb(os.path.join(workdir, 'checkpoint.minidb'))
    shard1 = load_minidb(os.path.join(workdir, 'checkpoint_shard1.minidb'))
    assert sorted(shard0) == sorted(shard1)
    replicated = [b for b in shard0 if b.endswith(REPLICATED_SUFFIXES)]
    assert len(replicated) == 2 * 12 + 1
    for name in replicated:
        np.testing.assert_array_equal(shard1[name], shard0[name], err_msg=name)
    assert int(shard0['optimizer_iteration']) == TRAIN_IMAGES // 64
    assert int(shard1['optimizer_iteration']) == TRAIN_IMAGES // 64
    # Each shard saw its own half of the data: the BN running means differ.
    assert not np.allclose(shard0['cpu_0/bn1_rm'], shard1['cpu_0/bn1_rm'])


def reference_accuracy(blobs, x, y):
    """The reference CNN's eval forward pass in numpy from the checkpoint."""
    def conv(a, w, b):
        n, c, h, wd = a.shape
        padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        cols = np.stack([padded[:, :, i:i + h, j:j + wd] for i in range(3) for j in range(3)],
                        axis=2)  # n, c, 9, h, w
        out = np.einsum('nckhw,ock->nohw', cols, w.reshape(w.shape[0], c, 9))
        return out + b.reshape(1, -1, 1, 1)

    def bn(a, name):
        scale, bias = p[name + '_s'], p[name + '_b']
        mean, var = p[name + '_rm'], p[name + '_riv']
        # _riv holds the running variance, whatever the name suggests.
        normed = (a - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5)
        return normed * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)

    def pool(a):
        n, c, h, w = a.shape
        return a.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))

    p = {k[len('cpu_0/'):]: v for k, v in blobs.items() if k.startswith('cpu_0/')}
    a = x.astype(np.float64) / 255.0
    a = (a - example.PIXEL_MEAN) / example.PIXEL_STD
    a = pool(np.maximum(bn(conv(a, p['conv1_w'], p['conv1_b']), 'bn1'), 0))
    a = pool(np.maximum(bn(conv(a, p['conv2_w'], p['conv2_b']), 'bn2'), 0))
    a = np.maximum(a.reshape(len(a), -1) @ p['fc3_w'].T + p['fc3_b'], 0)
    logits = a @ p['pred_w'].T + p['pred_b']
    return float(np.mean(logits.argmax(axis=1) == y))


def test_run_net_accuracy_equals_training_accuracy(run):
    workdir, _ = run
    with open(os.path.join(workdir, 'summary.json')) as f:
        summary = json.load(f)
    assert abs(summary['run_net_test_accuracy'] - summary['final_test_accuracy']) <= 1e-3
    args = example.parse_args(['--test_limit', str(TEST_IMAGES)])
    x, y = example.read_idx(args, 'test', TEST_IMAGES)
    blobs = load_minidb(os.path.join(workdir, 'checkpoint.minidb'))
    assert abs(reference_accuracy(blobs, x, y) - summary['final_test_accuracy']) <= 4e-3


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
