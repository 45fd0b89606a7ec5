"""tools/launch.py end to end: 2 and 3 ranks rendezvous from the environment
it sets (file store, given Redis, --start_redis) and allreduce known values,
checked against sums computed here; a failing rank makes the launcher exit
non-zero promptly and leaves no process behind; bad arguments are refused."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from redis_server import running_redis_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# tests/integration -> the repository (or runfiles) root's tools/.
LAUNCH = os.path.join(HERE, "..", "..", "tools", "launch.py")
WORKER = os.path.join(HERE, "launch_worker.py")
WALL_LIMIT_S = 60
RESULT = re.compile(r"^\[rank (\d+)\] result (\d+) (\d+) (\S+) (\S+) (\S+) (\S+)$")


@pytest.fixture(scope="module")
def redis_server():
    with running_redis_server() as port:
        yield "redis://127.0.0.1:%d" % port


@pytest.fixture
def pid_dir():
    directory = tempfile.mkdtemp(prefix="doppio_launch_pids_")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def launch(launcher_args, scenario, pid_dir):
    """Runs the launcher to completion; returns (exit code, stdout, stderr,
    seconds). Fails the test if it outlives WALL_LIMIT_S."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [sys.executable, LAUNCH] + launcher_args + [WORKER, scenario, pid_dir]
    start = time.time()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.communicate(timeout=WALL_LIMIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail("launcher hung past %d s:\n%s\n%s" % (WALL_LIMIT_S, out.decode(),
                                                          err.decode()))
    return process.returncode, out.decode(), err.decode(), time.time() - start


def alive(pid):
    """True for a live process; a zombie (killed, not yet reaped by whoever
    inherited it) counts as gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def recorded_pids(pid_dir):
    return {int(name[:-4]): open(os.path.join(pid_dir, name)).read()
            for name in os.listdir(pid_dir) if name.endswith(".pid")}


def assert_none_alive(pid_dir, expected_count):
    pids = recorded_pids(pid_dir)
    assert len(pids) == expected_count, pids
    deadline = time.time() + 2  # SIGKILLed processes may take a moment to vanish
    while any(alive(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.05)
    survivors = {pid: what for pid, what in pids.items() if alive(pid)}
    assert not survivors, "still running after the launcher: %s" % survivors


def check_allreduce(code, out, err, nprocs):
    """Every rank printed the sums of [r, 1, r*r] over r < nprocs, all under
    one run id; returns that id."""
    assert code == 0, (out, err)
    results = [RESULT.match(line) for line in out.splitlines()]
    results = [m for m in results if m]
    assert sorted(int(m.group(1)) for m in results) == list(range(nprocs)), (out, err)
    expected = [float(sum(range(nprocs))), float(nprocs),
                float(sum(r * r for r in range(nprocs)))]
    run_ids = set()
    for match in results:
        prefix_rank, rank, size = int(match.group(1)), int(match.group(2)), int(match.group(3))
        assert prefix_rank == rank and size == nprocs, match.group(0)
        assert [float(match.group(i)) for i in (5, 6, 7)] == expected, match.group(0)
        run_ids.add(match.group(4))
    assert len(run_ids) == 1, run_ids
    return run_ids.pop()


@pytest.mark.parametrize("nprocs", [2, 3])
def test_allreduce_with_default_file_store(pid_dir, nprocs):
    code, out, err, _ = launch(["--nprocs", str(nprocs)], "allreduce", pid_dir)
    check_allreduce(code, out, err, nprocs)
    assert_none_alive(pid_dir, nprocs)


def test_same_file_store_twice_gets_fresh_keys(pid_dir):
    store = tempfile.mkdtemp(prefix="doppio_launch_shared_store_")
    try:
        args = ["--nprocs", "2", "--store", "file://" + store]
        first = check_allreduce(*launch(args, "allreduce", pid_dir)[:3], nprocs=2)
        # The first run's keys are still in the directory; a second run under
        # the same prefix would read its stale addresses.
        assert os.listdir(store)
        second = check_allreduce(*launch(args, "allreduce", pid_dir)[:3], nprocs=2)
        assert first != second
    finally:
        shutil.rmtree(store, ignore_errors=True)


@pytest.mark.parametrize("nprocs", [2, 3])
def test_allreduce_with_given_redis(redis_server, pid_dir, nprocs):
    code, out, err, _ = launch(["--nprocs", str(nprocs), "--store", redis_server],
                               "allreduce", pid_dir)
    check_allreduce(code, out, err, nprocs)


@pytest.mark.parametrize("use_redis", [False, True])
def test_rendezvous_ops_added_to_a_net(redis_server, pid_dir, use_redis):
    args = ["--nprocs", "2"] + (["--store", redis_server] if use_redis else [])
    code, out, err, _ = launch(args, "allreduce_in_net", pid_dir)
    check_allreduce(code, out, err, 2)


def test_allreduce_with_started_redis(pid_dir):
    code, out, err, _ = launch(["--nprocs", "3", "--start_redis"], "allreduce", pid_dir)
    check_allreduce(code, out, err, 3)
    url = re.search(r"started (redis://127\.0\.0\.1:(\d+))", err)
    assert url, err
    # Stopped with the run: nothing answers on its port any more.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(url.group(2))), timeout=1).close()


@pytest.mark.parametrize("store", ["file", "redis"])
def test_failing_rank_stops_the_launch(redis_server, pid_dir, store):
    args = ["--nprocs", "3", "--grace_s", "1"]
    if store == "redis":
        args += ["--store", redis_server]
    code, out, err, seconds = launch(args, "fail", pid_dir)
    assert code == 3, (code, out, err)
    assert "rank 1 exited with code 3" in err, err
    # Ranks 0 and 2 wait in a 600 s rendezvous: only the launcher ends them,
    # 1 s grace + SIGTERM, well before this limit (which includes startup).
    assert seconds < 20, seconds
    assert "[rank 0] rank 0 waiting" in out and "[rank 2] rank 2 waiting" in out, out
    # 3 ranks and the `sleep` children of ranks 0 and 2.
    assert_none_alive(pid_dir, 5)


def test_sigterm_to_the_launcher_stops_every_rank(pid_dir):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # One rank: its world of one forms at once, then it sleeps 600 s.
    launcher = subprocess.Popen([sys.executable, LAUNCH, "--nprocs", "1", WORKER, "fail",
                                 pid_dir], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 30
        while len(recorded_pids(pid_dir)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert len(recorded_pids(pid_dir)) == 2, "the rank did not start its child"
        launcher.send_signal(signal.SIGTERM)
        _, err = launcher.communicate(timeout=15)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode != 0
    assert "stopping every rank" in err.decode(), err
    assert_none_alive(pid_dir, 2)


@pytest.mark.parametrize("args, message", [
    (["--nprocs", "0"], "--nprocs must be at least 1"),
    (["--nprocs", "2", "--store", "ftp://host:1"], "expected redis://host:port"),
    (["--nprocs", "2", "--store", "redis://host"], "redis://host:port"),
    (["--nprocs", "2", "--store", "file://relative/dir"], "file:///absolute/directory"),
    (["--nprocs", "2", "--store", "redis://h:1", "--start_redis"], "not both"),
])
def test_bad_arguments_are_refused(pid_dir, args, message):
    code, out, err, _ = launch(args, "allreduce", pid_dir)
    assert code == 2 and message in err, (code, err)
    assert not recorded_pids(pid_dir)


def test_missing_script_is_refused(pid_dir):
    process = subprocess.run([sys.executable, LAUNCH, "--nprocs", "2", "/no/such/script.py"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    assert process.returncode == 2 and b"does not exist" in process.stderr, process.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
