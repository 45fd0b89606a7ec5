"""fmnist_train.py --precision bf16 / fp16 beside float32 (issue 27): the
reference CNN and a CIFAR ResNet (ResNet-14) trained for the same steps on
the same data in the same order (one device, a seeded shuffle) learn as
float32 does. On this much data (200 steps) test accuracy moves by a few
points between any two runs that differ in rounding, so the checks are
loose: the last epoch's mean training loss within 10% of float32's and the
test accuracy within 4 points. The issue's 0.5-point criterion is measured
at full size by tools/bench/mixed_precision_bench.sh. float16 keeps its
loss scale finite and skips few steps."""
import sys

import numpy as np
import pytest

from python_api.examples import fmnist_train as example
from tests.examples.example_tools import tools_dir

TRAIN_IMAGES, TEST_IMAGES, EPOCHS = 6400, 2000, 2


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    done = {}

    def run(model, precision):
        if (model, precision) not in done:
            workdir = str(tmp_path_factory.mktemp('{}_{}'.format(model, precision)))
            done[model, precision] = example.main([
                '--model', model, '--epochs', str(EPOCHS), '--train_limit', str(TRAIN_IMAGES),
                '--test_limit', str(TEST_IMAGES), '--workdir', workdir, '--tools_dir',
                tools_dir(), '--no_progress', '--db_type', 'minidb', '--devices', '1',
                '--precision', precision, '--plot', 'none'])
        return done[model, precision]
    return run


def last_epoch_loss(summary):
    losses = np.array(summary['losses'])
    return losses[-len(losses) // EPOCHS:].mean()


@pytest.mark.parametrize('model', ['cnn', 'resnet'])
@pytest.mark.parametrize('precision', ['bf16', 'fp16'])
def test_learns_as_float32_does(runs, model, precision):
    reference, low = runs(model, 'fp32'), runs(model, precision)
    assert low['precision'] == precision
    assert np.isfinite(low['losses']).sum() >= len(low['losses']) - 2
    assert last_epoch_loss(low) == pytest.approx(last_epoch_loss(reference), rel=0.10)
    assert abs(low['final_test_accuracy'] - reference['final_test_accuracy']) <= 0.04
    assert low['final_test_accuracy'] > 0.7
    # The exported predict net is float32 (the master weights) and scores
    # what training measured.
    assert low['run_net_test_accuracy'] == pytest.approx(low['final_test_accuracy'], abs=0.01)
    if precision == 'fp16':
        state = low['loss_scale']
        assert state['skipped_steps'] <= 3 and 1.0 <= state['scale'] <= 65536.0
    else:
        assert low['loss_scale'] is None


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
