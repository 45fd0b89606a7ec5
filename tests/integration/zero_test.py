"""Sharded optimizer state, ZeRO stage 1 (issue 26): Parallelize(...,
shard_optimizer_state=True) across real processes under tools/launch.py
(zero_worker.py). The trained params equal the unsharded run's within float
tolerance, for momentum SGD on 2 processes and Adam on 3 (block sizes that
do not divide evenly); each process holds only its block of every
optimizer state blob, so optimizer memory per process falls by the process
count; sharded checkpoints resume at another process count, sharded (2 ->
3) or not (2 -> 1), and Load given every shard's file assembles the whole
optimizer state."""
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
WORKER = os.path.join(HERE, 'zero_worker.py')
WALL_LIMIT_S = 180


def launch(tmp_path, name, nprocs, steps, optimizer, shard, checkpoint_dir=None):
    prefix = str(tmp_path / name)
    spec = dict(steps=steps, optimizer=optimizer, shard=shard)
    command = [sys.executable, LAUNCH, '--nprocs', str(nprocs), '--grace_s', '10']
    if checkpoint_dir:
        command += ['--checkpoint_dir', str(checkpoint_dir), '--checkpoint_every', '3']
    command += [WORKER, json.dumps(spec), prefix]
    done = subprocess.run(command, env=python_path_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=WALL_LIMIT_S)
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    return [dict(np.load(prefix + '%d.npz' % rank)) for rank in range(nprocs)]


def whole_state(ranks):
    """Each optimizer state blob assembled from every rank's block."""
    assembled = {}
    for report in ranks:
        for entry in report['sharded']:
            blob, dims, _, begin, end = json.loads(str(entry))
            whole = assembled.setdefault(blob, np.full(int(np.prod(dims)), np.nan, np.float32))
            assert report['blob:' + blob].shape == (end - begin,)
            whole[begin:end] = report['blob:' + blob]
    return {blob: value for blob, value in assembled.items()}


def assert_params_close(expected, actual):
    names = [k for k in expected if k.startswith('blob:cpu_0/fc') and not k.endswith(
        ('_momentum', '_moment'))]
    assert len(names) == 6
    for name in names:
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize('optimizer,nprocs', [('momentum', 2), ('adam', 3)])
def test_sharded_training_equals_unsharded_with_a_block_of_state_per_process(
        tmp_path, optimizer, nprocs):
    plain = launch(tmp_path, 'plain', nprocs, 6, optimizer, shard=False)
    sharded = launch(tmp_path, 'sharded', nprocs, 6, optimizer, shard=True)
    for rank in range(nprocs):
        assert_params_close(plain[0], sharded[rank])
    state_names = [str(n) for n in plain[0]['state_names']]
    # Momentum: one blob per param; Adam: two.
    assert len(state_names) == (6 if optimizer == 'momentum' else 12), state_names
    whole = whole_state(sharded)
    assert sorted(whole) == state_names
    for name in state_names:
        expected = plain[0]['blob:' + name].ravel()
        assert np.abs(expected).max() > 0, name  # the state really was trained
        np.testing.assert_allclose(whole[name], expected, rtol=1e-5, atol=1e-7, err_msg=name)
    # Optimizer memory: the blocks tile the whole state, none larger than
    # its share (one element more where the count does not divide).
    plain_bytes = int(plain[0]['state_bytes'])
    sharded_bytes = [int(report['state_bytes']) for report in sharded]
    assert sum(sharded_bytes) == plain_bytes
    assert max(sharded_bytes) <= plain_bytes // nprocs + 4 * len(state_names), (
        sharded_bytes, plain_bytes)
    assert all(int(report['state_bytes']) == plain_bytes for report in plain)


def test_sharded_checkpoints_resume_at_another_process_count(tmp_path):
    uninterrupted = launch(tmp_path, 'plain', 2, 9, 'momentum', shard=False)
    first = tmp_path / 'first'
    launch(tmp_path, 'first', 2, 6, 'momentum', shard=True, checkpoint_dir=first)
    files = sorted(os.listdir(str(first)))
    assert files == ['checkpoint_3.shard0of2.minidb', 'checkpoint_3.shard1of2.minidb',
                     'checkpoint_6.shard0of2.minidb', 'checkpoint_6.shard1of2.minidb'], files
    # Load given both shards' files assembles the whole momentum, which
    # equals the unsharded run's after 6 steps.
    at_six = launch(tmp_path, 'six', 2, 6, 'momentum', shard=False)
    from doppio import core, workspace
    workspace.ResetWorkspace()
    names = [str(n) for n in at_six[0]['state_names']]
    workspace.RunOperatorOnce(core.CreateOperator(
        'Load', [], names, dbs=[str(first / f) for f in files[2:]], db_type='minidb',
        absolute_path=1))
    for name in names:
        np.testing.assert_allclose(workspace.FetchBlob(name), at_six[0]['blob:' + name],
                                   rtol=1e-5, atol=1e-7, err_msg=name)
    # Without one shard's file the checkpoint is incomplete, and Load says so.
    with pytest.raises(RuntimeError, match='fc1_w_momentum'):
        workspace.RunOperatorOnce(core.CreateOperator(
            'Load', [], names, dbs=[str(first / files[2])], db_type='minidb',
            absolute_path=1))
    for nprocs, shard in [(3, True), (1, False)]:
        resumed_dir = tmp_path / ('resumed%d' % nprocs)
        os.makedirs(str(resumed_dir))
        for name in files[2:]:
            os.link(str(first / name), str(resumed_dir / name))
        resumed = launch(tmp_path, 'resumed%d_' % nprocs, nprocs, 9, 'momentum', shard=shard,
                         checkpoint_dir=resumed_dir)
        assert all(int(report['resumed_at']) == 6 for report in resumed)
        for report in resumed:
            assert_params_close(uninterrupted[0], report)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
