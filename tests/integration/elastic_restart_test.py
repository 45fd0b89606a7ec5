"""Exact elastic restarts (issue 26): tools/launch.py --max_restarts 3 runs a
2-process MLP job whose ranks SIGKILL themselves at random iterations, 3
times (alternating ranks); each time the launcher stops the group and
restarts every rank, which resume from the last complete checkpoint
(doppio.distributed.Checkpointer: params, momentum, the iteration counter
behind the stepped learning rate). The final params equal an uninterrupted
run's bit for bit. A job that goes from 2 processes to 1 and back
(--nprocs 1:2 --nprocs_file) ends within float tolerance of it. With fewer
restarts allowed than failures the launcher gives up with the killed
rank's code."""
import json
import os
import re
import struct
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


def launch(tmp_path, name, offsets, *launcher_args, nprocs='2', nprocs_file=None, env=None):
    out = str(tmp_path / (name + '.npz'))
    command = [sys.executable, LAUNCH, '--nprocs', nprocs, '--grace_s', '10'] + list(
        launcher_args) + [WORKER, str(STEPS), json.dumps(offsets), out] + (
            [nprocs_file] if nprocs_file else [])
    done = subprocess.run(command, env=dict(python_path_env(), **(env or {})),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=WALL_LIMIT_S)
    return done, out


def write_db(path, records=37):
    """TensorProtos records (float32 features, int32 label) in the minidb
    layout (int32 key length, int32 value length, key, value)."""
    from doppio.proto import doppio_pb2
    rng = np.random.RandomState(5)
    with open(path, 'wb') as f:
        for i in range(records):
            record = doppio_pb2.TensorProtos()
            x = record.protos.add()
            x.data_type = doppio_pb2.TensorProto.FLOAT
            x.dims.extend([5])
            x.float_data.extend(rng.randn(5).astype(np.float32).tolist())
            y = record.protos.add()
            y.data_type = doppio_pb2.TensorProto.INT32
            y.int32_data.append(int(rng.randint(0, 3)))
            key, value = ('%06d' % i).encode(), record.SerializeToString()
            f.write(struct.pack('<ii', len(key), len(value)) + key + value)
    return path


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
        if key in ('restarts', 'resumed_at', 'world'):
            continue
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    # The newest two checkpoints are kept, complete (no temporaries left).
    names = sorted(os.listdir(str(checkpoints)))
    assert names == ['checkpoint_14.minidb', 'checkpoint_16.minidb'], names


def test_shuffled_db_readers_and_dropout_resume_bit_for_bit(tmp_path):
    """Batches from a DB: each rank's sharded reader behind a prefetching,
    shuffling TensorProtosDBInput, and a seeded Dropout. The checkpoint
    holds each rank's reader as the records its op had handed out (not the
    read-ahead cursor), which the restored reader replays through the
    shuffle buffer, and each op's random generator state."""
    env = {'ELASTIC_DB': write_db(str(tmp_path / 'train.minidb')), 'ELASTIC_DROPOUT': '1'}
    plain, plain_out = launch(tmp_path, 'plain_db', [], env=env)
    assert plain.returncode == 0, plain.stderr.decode()
    checkpoints = tmp_path / 'checkpoints_db'
    elastic, elastic_out = launch(tmp_path, 'elastic_db', [2, 3, 1], '--max_restarts', '3',
                                  '--checkpoint_dir', str(checkpoints),
                                  '--checkpoint_every', '3', env=env)
    log = elastic.stderr.decode()
    assert elastic.returncode == 0, log
    assert 'the DB readers start from the beginning' not in log, log
    expected, actual = np.load(plain_out), np.load(elastic_out)
    assert int(actual['restarts']) == 3 and int(actual['resumed_at']) > 0
    for key in expected.files:
        if key in ('restarts', 'resumed_at', 'world'):
            continue
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
    names = sorted(os.listdir(str(checkpoints)))
    assert 'checkpoint_15.local1of2.minidb' in names, names


def test_two_to_one_to_two_processes_resume_within_float_tolerance(tmp_path):
    """--nprocs 1:2 with a file the launcher reads before each start: the
    job loses a slot (2 -> 1 process, which then takes the whole global
    batch) and gets it back (1 -> 2); it ends with the uninterrupted
    2-process params to float tolerance (sums in another order)."""
    plain, plain_out = launch(tmp_path, 'plain2', [])
    assert plain.returncode == 0, plain.stderr.decode()
    nprocs_file = str(tmp_path / 'nprocs')
    elastic, elastic_out = launch(
        tmp_path, 'shrink_grow', [[3, 1], [4, 2]], '--max_restarts', '2',
        '--checkpoint_dir', str(tmp_path / 'ck'), '--checkpoint_every', '2',
        '--nprocs_file', nprocs_file, nprocs='1:2', nprocs_file=nprocs_file)
    log = elastic.stderr.decode()
    assert elastic.returncode == 0, log
    starts = [int(n) for n in re.findall(r'starting (\d+) processes', log)]
    assert starts == [1, 2], log
    expected, actual = np.load(plain_out), np.load(elastic_out)
    assert int(actual['world']) == 2 and int(actual['restarts']) == 2
    for key in expected.files:
        if key in ('restarts', 'resumed_at', 'world'):
            continue
        np.testing.assert_allclose(actual[key], expected[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


@pytest.mark.parametrize('files,expected', [
    (['checkpoint_3.minidb'], {3: ['checkpoint_3.minidb']}),
    # Rank 0's local file and params, rank 1's local file missing: cut short.
    (['checkpoint_3.minidb', 'checkpoint_3.local0of2.minidb'], {}),
    (['checkpoint_3.minidb', 'checkpoint_3.local0of2.minidb', 'checkpoint_3.local1of2.minidb'],
     {3: ['checkpoint_3.minidb']}),
    # An attempt at 2 processes cut short, then one at 3 that finished.
    (['checkpoint_6.minidb', 'checkpoint_6.local0of2.minidb'] +
     ['checkpoint_6.local%dof3.minidb' % r for r in range(3)], {6: ['checkpoint_6.minidb']}),
    (['checkpoint_6.shard0of2.minidb', 'checkpoint_6.shard1of2.minidb',
      'checkpoint_6.local0of2.minidb'], {}),
    (['checkpoint_6.shard0of2.minidb'] + ['checkpoint_6.shard%dof3.minidb' % r for r in range(3)],
     {6: ['checkpoint_6.shard%dof3.minidb' % r for r in range(3)]}),
    (['checkpoint_3.shard1of2.minidb', 'checkpoint_9.minidb', 'notes.txt'],
     {9: ['checkpoint_9.minidb']}),
])
def test_which_checkpoints_are_complete(tmp_path, files, expected):
    from doppio.distributed import Checkpointer
    for name in files:
        (tmp_path / name).write_bytes(b'')
    checkpointer = Checkpointer.__new__(Checkpointer)
    checkpointer.directory = str(tmp_path)
    complete, _ = checkpointer._files()
    assert {i: sorted(os.path.basename(p) for p in paths) for i, paths in complete.items()} == {
        i: sorted(paths) for i, paths in expected.items()}


def test_nprocs_range_is_checked():
    for bad in ('2:1', 'x', '1:2:3'):
        done = subprocess.run([sys.executable, LAUNCH, '--nprocs', bad, WORKER],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        assert done.returncode == 2 and b'MIN:MAX' in done.stderr, (bad, done.stderr)


def test_more_failures_than_restarts_gives_up_with_the_failure(tmp_path):
    done, out = launch(tmp_path, 'gives_up', [1, 1], '--max_restarts', '1',
                       '--checkpoint_dir', str(tmp_path / 'ck'))
    log = done.stderr.decode()
    assert done.returncode == 128 + 9, log
    assert 'restart 1 of 1' in log and 'restart 2' not in log, log
    assert not os.path.exists(out)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
