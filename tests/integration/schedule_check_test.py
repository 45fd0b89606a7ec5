"""Collective schedules are verified at the rendezvous (issue 26): two
processes whose models disagree -- one extra layer, one parameter of
another dtype, another gradient bucket cap -- both fail right after
CreateCommonWorld, well under a second and long before the 20 s collective
timeout, with an error naming the first differing collective of each rank;
processes that agree pass the check and train as before."""
import json
import os
import re
import shutil
import sys
import tempfile
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import run_workers  # noqa: E402

WORKER = os.path.join(HERE, 'schedule_check_worker.py')
TIMEOUT_MS = 20000
WALL_LIMIT_S = 60


@pytest.fixture
def store_dir():
    path = tempfile.mkdtemp(prefix='doppio_schedule_store_')
    yield path
    shutil.rmtree(path, ignore_errors=True)


def launch(store, specs):
    prefix = uuid.uuid4().hex

    def command(shard_id, spec):
        full = dict(store=store, prefix=prefix, shard_id=shard_id, num_shards=len(specs),
                    timeout_ms=TIMEOUT_MS, **spec)
        return lambda out: [sys.executable, WORKER, json.dumps(full), out]

    return run_workers([command(i, spec) for i, spec in enumerate(specs)], WALL_LIMIT_S,
                       tag='doppio_schedule_out_')[0]


def check_mismatch(reports, rank0_part, rank1_part):
    """Both ranks fail fast with the same error, naming each side's first
    differing collective."""
    errors = []
    for rank, report in enumerate(reports):
        assert 'error' in report, (rank, report)
        assert report['check_op'] == 'VerifyCollectiveSchedule', report
        assert report['rest_s'] < 1.0, report
        print('rank %d: schedule mismatch reported after %.1f ms' % (rank, 1e3 * report['rest_s']))
        errors.append(report['error'])
        assert 'collective schedules differ' in report['error'], report['error']
        assert 'VerifyCollectiveSchedule' in report['error'], report['error']
        assert 'rank %d of 2' % rank in report['error'], report['error']
    # The comparison is the same on both sides; only "this is rank r" differs.
    first = [re.sub(r'rank \d of 2', '', e).split('[this is')[0] for e in errors]
    assert first[0] == first[1], errors
    match = re.search(r'rank 0: (.*?); rank 1: (.*?)\. Every rank', errors[0])
    assert match, errors[0]
    assert rank0_part in match.group(1), (rank0_part, match.group(1))
    assert rank1_part in match.group(2), (rank1_part, match.group(2))
    return match


def test_agreeing_shards_pass_the_check(store_dir):
    reports = launch(store_dir, [dict(variant='base'), dict(variant='base')])
    for report in reports:
        assert report.get('ok'), report
        assert report['check_op'] == 'VerifyCollectiveSchedule'
    # The step after the check summed both shards' gradients alike.
    assert reports[0]['fc1_w'] == reports[1]['fc1_w']


def test_accumulating_shards_pass_the_check_and_train_alike(store_dir):
    reports = launch(store_dir, [dict(variant='base', accumulate_steps=2),
                                 dict(variant='base', accumulate_steps=2)])
    for report in reports:
        assert report.get('ok'), report
    assert reports[0]['fc1_w'] == reports[1]['fc1_w']


def test_bmuf_shards_average_their_local_models(store_dir):
    """Parallelize_BMUF over 2 processes: the first block update with the
    default block momentum (1 - 1/2) and block_learning_rate 1 sets the
    global model to the average of the two shards' local models."""
    reports = launch(store_dir, [dict(variant='bmuf'), dict(variant='bmuf')])
    for report in reports:
        assert report.get('ok'), report
    local = [np.array(r['local_fc1_w']) for r in reports]
    assert np.abs(local[0] - local[1]).max() > 1e-4  # each trained on its own data
    np.testing.assert_allclose(np.array(reports[0]['fc1_w']), (local[0] + local[1]) / 2,
                               rtol=1e-5, atol=1e-6)
    assert reports[0]['fc1_w'] == reports[1]['fc1_w']


def test_a_sync_added_after_the_pass_is_checked_too(store_dir):
    reports = launch(store_dir, [dict(variant='base'), dict(variant='base', extra_sync=True)])
    for report in reports:
        assert 'error' in report, report
        assert report['rest_s'] < 1.0, report
        assert 'collective schedules differ' in report['error'], report['error']
    assert re.search(r'rank 0 has no collective \d+', reports[0]['error']), reports[0]['error']
    assert 'cpu_0/fc1_b FLOAT (7)' in reports[0]['error'], reports[0]['error']


def test_an_extra_layer_is_named_on_both_sides(store_dir):
    reports = launch(store_dir, [dict(variant='base'), dict(variant='extra_layer')])
    match = check_mismatch(reports, 'Broadcast', 'Broadcast')
    # The init broadcasts come first: rank 0 sends fc2_w where rank 1 has
    # its extra layer's weight.
    assert 'cpu_0/fc2_w FLOAT (3, 7)' in match.group(1), match.group(1)
    assert 'cpu_0/fc_extra_w FLOAT (7, 7)' in match.group(2), match.group(2)
    assert "(net '" in match.group(1) and "(net '" in match.group(2)


def test_a_different_dtype_is_named_on_both_sides(store_dir):
    reports = launch(store_dir, [dict(variant='base'), dict(variant='double_bias')])
    check_mismatch(reports, 'cpu_0/fc2_b FLOAT (3)', 'cpu_0/fc2_b DOUBLE (3)')


def test_a_different_bucket_cap_is_named_on_both_sides(store_dir):
    reports = launch(store_dir, [dict(variant='base'),
                                 dict(variant='base', bucket_cap_mb=0)])
    # Rank 0 packs the four gradients into one bucket; rank 1 sends each alone.
    match = check_mismatch(reports, 'AllreduceCoalesced', 'Allreduce engine=GLOO')
    assert 'AllreduceCoalesced' not in match.group(2)
    for grad in ('fc2_w_grad', 'fc2_b_grad', 'fc1_w_grad', 'fc1_b_grad'):
        assert 'cpu_0/' + grad in match.group(1), match.group(1)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
