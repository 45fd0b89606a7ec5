"""Mixed precision across real processes (tools/launch.py,
mixed_precision_worker.py): with float16 and dynamic loss scaling, a step
on which one rank alone overflows is skipped by every rank (the flag comes
from the reduced gradients, which every rank holds alike, or, with sharded
optimizer state, from an allreduce of the ranks' verdicts): no rank's
weights move, every rank halves its scale and counts the skip, and the
ranks stay bit-identical before and after. bfloat16 trains without a loss
scale and keeps the ranks identical too."""
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
WORKER = os.path.join(HERE, 'mixed_precision_worker.py')
WALL_LIMIT_S = 120


def launch(tmp_path, name, nprocs, spec):
    prefix = str(tmp_path / name)
    command = [sys.executable, LAUNCH, '--nprocs', str(nprocs), '--grace_s', '10', WORKER,
               json.dumps(spec), prefix]
    done = subprocess.run(command, env=python_path_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=WALL_LIMIT_S)
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    return [dict(np.load(prefix + '%d.npz' % rank)) for rank in range(nprocs)]


@pytest.mark.parametrize('model', ['mlp', 'linear'])
@pytest.mark.parametrize('shard', [False, True])
def test_an_overflow_on_one_rank_is_skipped_by_every_rank(tmp_path, shard, model):
    """With shard_optimizer_state each rank sees only its blocks of the
    gradients, and the ranks' verdicts are reduced: in the linear model only
    rank 1's block of the gradient is non-finite, and rank 0 skips too."""
    steps, bad = 6, 3
    ranks = launch(tmp_path, 'fp16', 2, dict(steps=steps, precision='fp16', init_scale=1024.0,
                                              overflow_step=bad, overflow_rank=1, shard=shard,
                                              model=model))
    for rank, report in enumerate(ranks):
        skipped, scales, weights = report['skipped'], report['scales'], report['weights']
        assert skipped.tolist() == [0] * bad + [1] * (steps - bad), rank
        assert scales[bad - 1] == 1024.0 and scales[bad] == 512.0, (rank, scales)
        np.testing.assert_array_equal(weights[bad], weights[bad - 1])
        for step in range(1, steps):
            if step != bad:
                assert not np.array_equal(weights[step], weights[step - 1]), (rank, step)
    np.testing.assert_array_equal(ranks[0]['weights'], ranks[1]['weights'])
    np.testing.assert_array_equal(ranks[0]['scales'], ranks[1]['scales'])


def test_bfloat16_ranks_stay_identical_without_a_loss_scale(tmp_path):
    ranks = launch(tmp_path, 'bf16', 2, dict(steps=4, precision='bf16'))
    assert ranks[0]['skipped'].tolist() == [-1] * 4  # no loss scaling for bfloat16
    np.testing.assert_array_equal(ranks[0]['weights'], ranks[1]['weights'])
    assert not np.array_equal(ranks[0]['weights'][0], ranks[0]['weights'][-1])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
