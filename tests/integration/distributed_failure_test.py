"""A shard lost mid-training and a rendezvous over a finished run's keys.

Kill (with a file store and with a redis-server): 4 shards train the MLP;
shard 1 SIGKILLs itself before step 5. Every other shard fails that step's
Allreduce within 2x timeout_ms with an error naming the collective, its own
rank and the lost shard's; none hangs. Shard 0 checkpointed
after every step; all 4 restart from its last checkpoint under a fresh key
prefix and finish the 10 steps with the params of an uninterrupted run.

Stale keys: the file store keeps a finished run's keys (the ranks'
addresses). A second run in the same directory under the same prefix does
not train against them: it fails with a clear error within 2x timeout_ms.
Give each run its own prefix (tools/launch.py uses its run id) to reuse a
directory."""
import os
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import distributed_training_worker as worker  # noqa: E402
from distributed_scale_test import assert_trained, launch, mlp_specs, store  # noqa: E402,F401
from gloo_collectives_test import file_store, lost_ranks, redis_server  # noqa: E402,F401

TIMEOUT_MS = 3000
KILL_AT_STEP, KILLED_RANK = 5, 1


def test_killed_shard_fails_the_others_then_restart_matches_uninterrupted(store, tmp_path):
    checkpoint = str(tmp_path / 'shard0.minidb')
    reports, exit_s = launch(store, mlp_specs(4, checkpoint=checkpoint,
                                                   kill_at_step=KILL_AT_STEP,
                                                   kill_rank=KILLED_RANK),
                             timeout_ms=TIMEOUT_MS)
    assert reports[KILLED_RANK].get('exit') == -9, reports[KILLED_RANK]
    for rank, report in enumerate(reports):
        if rank == KILLED_RANK:
            continue
        assert 'error' in report, (rank, report)
        message = report['error']
        assert 'Allreduce' in message and 'rank %d of 4' % rank in message, message
        # A survivor may also have lost a survivor that failed and left
        # first, but the killed shard's connection is always among the lost.
        assert KILLED_RANK in lost_ranks(message), message
        assert rank not in lost_ranks(message), message
        assert report['step'] == KILL_AT_STEP, report
        assert report['step_elapsed'] < 2 * TIMEOUT_MS / 1000.0, report
    # No survivor outlives the lost shard by more than 2x the timeout (the
    # killed one exits at about the same moment as it steps into KILL_AT_STEP).
    survivors = [s for r, s in enumerate(exit_s) if r != KILLED_RANK]
    assert max(survivors) - exit_s[KILLED_RANK] < 2 * TIMEOUT_MS / 1000.0 + 1, exit_s
    assert reports[0]['checkpointed_steps'] == KILL_AT_STEP

    resumed, _ = launch(store, mlp_specs(4, resume_from=checkpoint,
                                              resume_step=KILL_AT_STEP),
                        timeout_ms=TIMEOUT_MS)
    assert_trained(resumed)
    uninterrupted, _ = launch(store, mlp_specs(4), timeout_ms=TIMEOUT_MS)
    assert_trained(uninterrupted)
    for p in worker.mlp.PARAMS:
        assert not np.allclose(resumed[0]['init'][p], uninterrupted[0]['final'][p]), p
        for rank in range(4):
            np.testing.assert_allclose(resumed[rank]['final'][p], uninterrupted[0]['final'][p],
                                       rtol=1e-6, atol=0, err_msg='rank %d %s' % (rank, p))


def test_second_run_on_a_finished_runs_keys_fails_clearly(store):
    # Fresh per test run: Redis outlives the test, and the point is keys of
    # a run that finished *here*.
    prefix = 'reused_prefix_%d_%d' % (os.getpid(), int(time.time() * 1000))
    first, _ = launch(store, mlp_specs(2), prefix=prefix, timeout_ms=TIMEOUT_MS)
    assert_trained(first)
    second, _ = launch(store, mlp_specs(2), prefix=prefix, timeout_ms=TIMEOUT_MS,
                       wall_limit_s=4 * TIMEOUT_MS / 1000.0 + 10)
    for rank, report in enumerate(second):
        assert 'error' in report, (rank, report)
        message = report['error']
        # Neither store overwrites a key: the old run's addresses make the
        # rendezvous fail at once instead of connecting to dead ports.
        assert 'CreateCommonWorld' in message and 'rank %d of 2' % rank in message, message
        assert "prefix '%s'" % prefix in message, message
        assert report['elapsed'] < 2 * TIMEOUT_MS / 1000.0 + 3, report
    # A fresh prefix in the same store works.
    third, _ = launch(store, mlp_specs(2), timeout_ms=TIMEOUT_MS)
    assert_trained(third)
    for p in worker.mlp.PARAMS:
        np.testing.assert_array_equal(third[0]['final'][p], first[0]['final'][p])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
