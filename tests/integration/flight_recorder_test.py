"""The flight recorder (parallel/gloo/flight_recorder.h, issue 26) across
real processes: when a peer dies the survivor's error names the file its
recorder was dumped to, and the file lists the collectives it ran (op,
bytes, peers, times) with the failed one last; a rank stuck in a
collective dumps its records on SIGUSR1, the stuck one marked running, and
keeps waiting."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import python_path_env  # noqa: E402

WORKER = os.path.join(HERE, 'flight_recorder_worker.py')
STEPS = 4


@pytest.fixture
def dirs():
    store = tempfile.mkdtemp(prefix='doppio_fr_store_')
    dump = tempfile.mkdtemp(prefix='doppio_fr_dump_')
    yield store, dump
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(dump, ignore_errors=True)


def start(dirs, scenario, timeout_ms):
    store, dump = dirs
    env = dict(python_path_env(), DOPPIO_FLIGHT_RECORDER_DIR=dump)
    prefix = uuid.uuid4().hex
    processes = []
    for rank in range(2):
        spec = dict(store=store, prefix=prefix, rank=rank, steps=STEPS, scenario=scenario,
                    timeout_ms=timeout_ms, dump_dir=dump)
        out = os.path.join(dump, 'report_%d.json' % rank)
        processes.append((out, subprocess.Popen(
            [sys.executable, WORKER, json.dumps(spec), out], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
    return processes


def finish(processes, limit_s):
    try:
        for _, process in processes:
            process.communicate(timeout=limit_s)
    finally:
        for _, process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def load(path):
    with open(path) as f:
        return json.load(f)


def check_records(records, last_state):
    """STEPS Allreduces that ended well, then the last one."""
    allreduces = [r for r in records if r['op'] == "Allreduce 'allreduce_x'"]
    assert len(allreduces) == STEPS + 1, records
    for r in allreduces[:-1]:
        assert r['state'] == 'ok', r
        assert r['bytes'] == 4000 and r['size'] == 2 and r['rank'] == 0, r
        assert 0 < r['start_s'] <= r['end_s'], r
    assert re.match(last_state, allreduces[-1]['state']), allreduces[-1]
    sequences = [r['sequence'] for r in records]
    assert sequences == sorted(sequences)
    return allreduces[-1]


def test_a_lost_peer_dumps_the_recorder_and_the_error_says_where(dirs):
    processes = start(dirs, 'die', timeout_ms=20000)
    finish(processes, 60)
    report = load(processes[0][0])
    error = report['error']
    assert error and 'lost rank 1' in error, error
    match = re.search(r"this rank's last collectives are in (\S+\.json)", error)
    assert match, error
    path = match.group(1)
    assert os.path.dirname(path) == dirs[1]
    dumped = load(path)
    assert dumped['rank'] == 0 and dumped['pid'] > 0
    assert 'failed on rank 0 of 2' in dumped['reason'], dumped['reason']
    last = check_records(dumped['collectives'], r'failed: .*lost rank 1')
    assert last['end_s'] >= last['start_s']
    # Rank 1 died by SIGKILL: it wrote nothing.
    assert processes[1][1].returncode == -signal.SIGKILL


def test_sigusr1_dumps_a_stuck_rank_without_stopping_it(dirs):
    processes = start(dirs, 'stall', timeout_ms=15000)
    try:
        ready = os.path.join(dirs[1], 'ready_0')
        deadline = time.time() + 30
        while not os.path.exists(ready) and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(ready), 'rank 0 never got through its first collectives'
        time.sleep(0.5)  # rank 0 is now inside its last Allreduce
        rank0 = processes[0][1]
        rank0.send_signal(signal.SIGUSR1)
        pattern = os.path.join(dirs[1], 'doppio_flight_recorder_rank0_pid%d.json' % rank0.pid)
        deadline = time.time() + 10
        while not glob.glob(pattern) and time.time() < deadline:
            time.sleep(0.05)
        assert glob.glob(pattern), os.listdir(dirs[1])
        dumped = load(glob.glob(pattern)[0])
        assert dumped['reason'] == 'SIGUSR1'
        last = check_records(dumped['collectives'], r'running$')
        assert last['end_s'] == 0
        # The signal did not kill it: it is still waiting for rank 1.
        assert rank0.poll() is None
    finally:
        for _, process in processes:
            process.kill()
            process.wait()


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
