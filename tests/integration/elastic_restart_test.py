"""Exact elastic restarts (issue 26): tools/launch.py --max_restarts 3 runs a
2-process MLP job whose ranks SIGKILL themselves at random iterations, 3
times (alternating ranks); each time the launcher stops the group and
restarts every rank, which resume from the last complete checkpoint
(doppio.distributed.Checkpointer: params, momentum, the iteration counter
behind the stepped learning rate). The final params equal an uninterrupted
run's bit for bit. With fewer restarts allowed than failures the launcher
gives up with the killed rank's code."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import python_path_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
LAUNCH = os.path.join(ROOT, 'tools', 'launch.py')
WORKER = os.path.join(HERE, 'elastic_worker.py')
STEPS = 16
WALL_LIMIT_S = 240


def launch(tmp_path, name, offsets, *launcher_args):
    out = str(tmp_path / (name + '.npz'))
    command = [sys.executable, LAUNCH, '--nprocs', '2', '--grace_s', '10'] + list(
        launcher_args) + [WORKER, str(STEPS), json.dumps(offsets), out]
    done = subprocess.run(command, env=python_path_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=WALL_LIMIT_S)
    return done, out


def test_three_kills_resume_to_the_uninterrupted_params_bit_for_bit(tmp_path):
    plain, plain_out = launch(tmp_path, 'plain', [])
    assert plain.returncode == 0, plain.stderr.decode()
    # Random kill points (a fixed seed, so a failure reproduces): 1..3
    # iterations after each resume.
    offsets = [int(o) for o in np.random.RandomState(26).randint(1, 4, size=3)]
    checkpoints = tmp_path / 'checkpoints'
    elastic, elastic_out = launch(tmp_path, 'elastic', offsets, '--max_restarts', '3',
                                  '--checkpoint_dir', str(checkpoints),
                                  '--checkpoint_every', '2')
    log = elastic.stderr.decode()
    assert elastic.returncode == 0, log
    for restart in (1, 2, 3):
        assert 'restarting every rank (restart %d of 3) from the last complete checkpoint' % (
            restart) in log, log
    assert 'was killed by SIGKILL' in log, log
    expected, actual = np.load(plain_out), np.load(elastic_out)
    assert int(actual['restarts']) == 3 and int(actual['resumed_at']) > 0
    assert int(expected['restarts']) == 0
    for key in expected.files:
        if key in ('restarts', 'resumed_at'):
            continue
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    # The newest two checkpoints are kept, complete (no temporaries left).
    names = sorted(os.listdir(str(checkpoints)))
    assert names == ['checkpoint_14.minidb', 'checkpoint_16.minidb'], names


def test_more_failures_than_restarts_gives_up_with_the_failure(tmp_path):
    done, out = launch(tmp_path, 'gives_up', [1, 1], '--max_restarts', '1',
                       '--checkpoint_dir', str(tmp_path / 'ck'))
    log = done.stderr.decode()
    assert done.returncode == 128 + 9, log
    assert 'restart 1 of 1' in log and 'restart 2' not in log, log
    assert not os.path.exists(out)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
