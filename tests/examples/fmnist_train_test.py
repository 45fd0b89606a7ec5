"""python_api/examples/fmnist_train.py end to end on part of Fashion-MNIST:
it learns, its checkpoint holds the trained state, and the exported predict
net scored by the real run_net binary agrees with the accuracy measured in
training.

The full run (3 epochs, >= 0.91) is the README's main job, not a test.
"""
import json
import os
import sys

import numpy as np
import pytest

from caffe2.python import core, workspace
from python_api.examples import fmnist_train as example

TRAIN_IMAGES = 3200
TEST_IMAGES = 1000


def tools_dir():
    runfiles = os.environ.get('TEST_SRCDIR')
    if runfiles:
        return os.path.join(runfiles, 'doppio', 'tools')
    return os.path.join(example.REPO_ROOT, 'bazel-bin', 'tools')


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('fmnist'))
    summary = example.main([
        '--epochs', '2', '--train_limit', str(TRAIN_IMAGES), '--test_limit',
        str(TEST_IMAGES), '--workdir', workdir, '--tools_dir', tools_dir(),
        '--no_progress', '--db_type', 'minidb'])
    return workdir, summary


def test_it_learns(run):
    _, summary = run
    losses = np.array(summary['losses'])
    iters = TRAIN_IMAGES // 64
    assert losses.shape == (2 * iters,)
    assert np.isfinite(losses).all()
    # Chance is ln(10) = 2.30 and 10%: after 100 steps the CNN is far past both.
    assert losses[:10].mean() > 1.5
    assert losses[-20:].mean() < 1.0
    assert summary["final_test_accuracy"] >= 0.6
    assert [e['epoch'] for e in summary['epochs']] == [1, 2]


def test_run_net_scores_the_exported_net_like_training(run):
    workdir, summary = run
    for name in ('predict_net.pb', 'init_net.pb'):
        assert os.path.getsize(os.path.join(workdir, name)) > 0
    # run_net sees all 1000 raw test images at once; training scored them in
    # batches of 100 through the DB reader. Same params, same BN statistics.
    assert abs(summary['run_net_test_accuracy'] - summary['final_test_accuracy']) <= 1e-3


def test_checkpoint_restores_the_trained_state(run):
    workdir, summary = run
    trained = {name: workspace.FetchBlob(name) for name in summary['checkpoint_blobs']}
    assert {'conv1_w', 'bn1_rm', 'pred_b', 'pixel_shift'} <= set(trained)
    workspace.SwitchWorkspace('restore', True)
    try:
        workspace.RunOperatorOnce(core.CreateOperator(
            'Load', [], [], db=summary['checkpoint'], db_type='minidb', load_all=1,
            absolute_path=1))
        assert sorted(workspace.Blobs()) == sorted(trained)
        for name, value in trained.items():
            np.testing.assert_array_equal(workspace.FetchBlob(name), value, err_msg=name)
    finally:
        workspace.SwitchWorkspace('default')


def test_summary_and_plot_are_written(run):
    workdir, summary = run
    with open(os.path.join(workdir, 'summary.json')) as f:
        assert json.load(f)['final_test_accuracy'] == summary['final_test_accuracy']
    with open(os.path.join(workdir, 'loss.png'), 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_bad_arguments_are_clear(tmp_path, capsys):
    with pytest.raises(SystemExit):
        example.main(['--epochs', '0', '--workdir', str(tmp_path)])
    assert '--epochs' in capsys.readouterr().err
    with pytest.raises(SystemExit, match='missing'):
        example.main(['--data_dir', str(tmp_path), '--workdir', str(tmp_path),
                      '--tools_dir', tools_dir()])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
