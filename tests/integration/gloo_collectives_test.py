"""Gloo collectives across real processes on loopback: 2 and 4 ranks that
rendezvous through a file store or a redis-server started here, results
checked against numpy over every rank's known inputs; a lost peer, a
missing rank and an unreachable Redis end in clear errors, never a hang."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gloo_worker  # noqa: E402  (the ranks' code: its known_inputs)
from redis_server import free_port, running_redis_server  # noqa: E402

WORKER = os.path.join(HERE, "gloo_worker.py")
WALL_LIMIT_S = 40


@pytest.fixture(scope="module")
def redis_server():
    with running_redis_server() as port:
        yield {"kind": "redis", "host": "127.0.0.1", "port": port}


@pytest.fixture
def file_store():
    directory = tempfile.mkdtemp(prefix="doppio_gloo_store_")
    yield {"kind": "file", "path": directory}
    shutil.rmtree(directory, ignore_errors=True)


def gave_up_by(timeout_ms):
    """The latest a rank that gave up at its timeout reports, in seconds:
    enough to tell it from one that waited for the 30 s default. Twice the
    timeout, and at least 5 s past it (a loaded 2-core machine took 3.3 s
    for a 1.5 s timeout)."""
    return max(2 * timeout_ms / 1000.0, timeout_ms / 1000.0 + 5.0)


def launch(store, size, scenario, ranks=None, timeout_ms=10000, with_exit_times=False,
           **extra):
    """Runs `ranks` (default all) of a `size`-rank world; returns each rank's
    report (and, `with_exit_times`, the times ranks recorded when their
    processes left). Fails the test if any process outlives WALL_LIMIT_S."""
    ranks = list(range(size)) if ranks is None else ranks
    out_dir = tempfile.mkdtemp(prefix="doppio_gloo_out_")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    prefix = uuid.uuid4().hex  # fresh keys: Redis keeps those of earlier tests
    processes = []
    try:
        for rank in ranks:
            spec = dict(store=store, prefix=prefix, size=size, rank=rank,
                        timeout_ms=timeout_ms, scenario=scenario, **extra)
            out = os.path.join(out_dir, "rank%d.json" % rank)
            processes.append((rank, out, subprocess.Popen(
                [sys.executable, WORKER, json.dumps(spec), out], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        deadline = time.time() + WALL_LIMIT_S
        reports = {}
        for rank, out, process in processes:
            try:
                output, _ = process.communicate(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pytest.fail("rank %d of %d hung past %d s" % (rank, size, WALL_LIMIT_S))
            if os.path.exists(out):
                with open(out) as f:
                    reports[rank] = json.load(f)
            else:
                reports[rank] = {"exit": process.returncode,
                                 "output": output.decode(errors="replace")}
        if not with_exit_times:
            return reports
        exit_times = {}
        for rank, out, _ in processes:
            if os.path.exists(out + ".exit"):
                with open(out + ".exit") as f:
                    exit_times[rank] = float(f.read())
        return reports, exit_times
    finally:
        for _, _, process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(out_dir, ignore_errors=True)


def lost_ranks(message):
    """The ranks a collective's error says it lost ("lost rank 2 (addr)" or
    "lost ranks 0 (addr), 2 (addr)"), as a set; empty when it names none."""
    match = re.search(r"lost ranks? ((?:\d+ \([^)]*\)(?:, )?)+)", message)
    return set(int(r) for r in re.findall(r"(\d+) \(", match.group(1))) if match else set()


def check_collectives(reports, size):
    inputs = [gloo_worker.known_inputs(rank) for rank in range(size)]
    total_a = np.sum([a for a, _ in inputs], axis=0, dtype=np.float64)
    # Allreduce's tensors are replicas in Caffe2's sense: each becomes the sum
    # of every tensor of every rank.
    total_ab = total_a + np.sum([b for _, b in inputs], axis=0, dtype=np.float64)
    gathered = np.concatenate([x for pair in inputs for x in pair])
    n = gloo_worker.LENGTH
    blocks = [n // size + (1 if r < n % size else 0) for r in range(size)]
    for rank in range(size):
        report = reports[rank]
        assert "error" not in report and "exit" not in report, (
            rank, report.get("error") or report.get("output"))
        for algorithm in ["ring", "ring_chunked", "halving_doubling", "default"]:
            a, b = report["allreduce_" + algorithm]
            np.testing.assert_allclose(a, total_ab, rtol=1e-6, err_msg=algorithm)
            np.testing.assert_allclose(b, total_ab, rtol=1e-6, err_msg=algorithm)
        np.testing.assert_array_equal(report["broadcast"], inputs[size - 1][0])
        np.testing.assert_array_equal(report["allgather"], gathered)
        begin = sum(blocks[:rank])
        # Block r of the sum lands at the front of rank r's buffer.
        np.testing.assert_allclose(report["reduce_scatter"][:blocks[rank]],
                                   total_a[begin:begin + blocks[rank]], rtol=1e-6)
        assert report["status_ok"] == 0
        np.testing.assert_allclose(report["allreduce_clone"], total_a, rtol=1e-6)
        # Coalesced: each tensor summed with its namesakes only.
        coalesced_a, coalesced_m = report["coalesced"]
        np.testing.assert_allclose(coalesced_a, total_a, rtol=1e-6)
        total_m = np.sum([gloo_worker.known_matrix(r) for r in range(size)], axis=0)
        np.testing.assert_allclose(coalesced_m, total_m, rtol=1e-6)
        # ReduceScatterBlocks: this rank's block of each flattened sum;
        # AllgatherBlocks puts every rank's blocks back in their places.
        block_a, block_m = report["blocks"]
        m_blocks = [6 // size + (1 if r < 6 % size else 0) for r in range(size)]
        m_begin = sum(m_blocks[:rank])
        np.testing.assert_allclose(block_a, total_a[begin:begin + blocks[rank]], rtol=1e-6)
        np.testing.assert_allclose(block_m, total_m.ravel()[m_begin:m_begin + m_blocks[rank]],
                                   rtol=1e-6)
        gathered_a, gathered_m = report["gathered_blocks"]
        np.testing.assert_allclose(gathered_a, total_a, rtol=1e-6)
        np.testing.assert_allclose(gathered_m, total_m, rtol=1e-6)


@pytest.mark.parametrize("size", [2, 3, 4])
def test_collectives_file_store(file_store, size):
    check_collectives(launch(file_store, size, "collectives"), size)


@pytest.mark.parametrize("size", [2, 4])
def test_collectives_redis_store(redis_server, size):
    check_collectives(launch(redis_server, size, "collectives"), size)


@pytest.mark.parametrize("size", [2, 3])
def test_a_normal_exit_waits_for_every_peer(file_store, size):
    # Gloo fails a peer still reading the last collective's final message
    # when the sender's exit closes the socket (seen as "Connection closed by
    # peer" in 3-rank ring_chunked runs); rank 0 must leave only after the
    # lingering ranks reached their own exit.
    reports, exit_times = launch(file_store, size, "exit_order", linger_s=1.5,
                                 with_exit_times=True)
    for rank in range(size):
        assert "error" not in reports[rank] and "exit" not in reports[rank], reports[rank]
    latest_leaving = max(reports[rank]["leaving_at"] for rank in range(1, size))
    assert exit_times[0] >= latest_leaving, (exit_times[0], latest_leaving)


def test_an_uncaught_exception_exits_without_waiting(file_store):
    reports, exit_times = launch(file_store, 2, "exit_order", linger_s=3.0,
                                 rank0_raises=True, with_exit_times=True)
    assert "leaving_at" in reports[1], reports[1]
    # Rank 0 left well before rank 1 stopped lingering.
    assert exit_times[0] < reports[1]["leaving_at"] - 1.0, (exit_times[0], reports[1])


@pytest.mark.parametrize("quit", ["exit", "idle"])
def test_lost_peer_fails_the_collective_within_twice_the_timeout(file_store, quit):
    timeout_ms = 2000
    size = 3
    reports = launch(file_store, size, "peer_lost", timeout_ms=timeout_ms, quit=quit,
                     idle_s=3 * timeout_ms / 1000.0)
    lost = size - 1  # the rank gloo_worker.peer_lost makes quit
    for rank in (0, 1):
        report = reports[rank]
        assert "error" in report, (rank, report)
        message = report["error"]
        assert "allreduce (ring)" in message and "Allreduce" in message, message
        assert "rank %d of 3" % rank in message, message
        # Dead or silent, the quitting rank is the one the ring waits on:
        # every survivor's error names it.
        assert lost in lost_ranks(message), message
        assert rank not in lost_ranks(message), message
        assert report["elapsed"] < gave_up_by(timeout_ms), report


def test_lost_peer_sets_the_status_output_instead_of_throwing(redis_server):
    reports = launch(redis_server, 2, "peer_lost", timeout_ms=2000, quit="exit", status=True)
    assert "error" not in reports[0], reports[0]
    assert reports[0]["status"] == 1
    assert reports[0]["elapsed"] < 4.0


@pytest.mark.parametrize("store_kind", ["file", "redis"])
def test_missing_rank_times_out_the_rendezvous(file_store, redis_server, store_kind):
    store = file_store if store_kind == "file" else redis_server
    timeout_ms = 1500
    # A world of 3 of which only ranks 0 and 1 ever start.
    reports = launch(store, 3, "rendezvous", ranks=[0, 1], timeout_ms=timeout_ms)
    for rank in (0, 1):
        report = reports[rank]
        assert "error" in report, (rank, report)
        message = report["error"]
        assert "CreateCommonWorld" in message and "rendezvous" in message, message
        assert "rank %d of 3" % rank in message
        assert ("file store" if store_kind == "file" else "Redis store") in message
        assert report["elapsed"] < gave_up_by(timeout_ms), report


def test_unreachable_redis_names_host_and_port():
    from doppio import core, workspace
    port = free_port()  # nothing listens there
    op = core.CreateOperator("RedisStoreHandlerCreate", [], ["store"], host="127.0.0.1",
                             port=port)
    start = time.time()
    with pytest.raises(RuntimeError, match="127.0.0.1:%d" % port):
        workspace.RunOperatorOnce(op)
    assert time.time() - start < 5


def test_bad_input_in_one_process_is_a_clear_error(file_store):
    from doppio import core, workspace
    workspace.ResetWorkspace()

    def run(*args, **kwargs):
        workspace.RunOperatorOnce(core.CreateOperator(*args, **kwargs))

    run("FileStoreHandlerCreate", [], ["store"], path=file_store["path"])
    run("CreateCommonWorld", ["store"], ["world"], size=1, rank=0, interface="lo")
    x = np.array([1.0, -2.0, 3.0], np.float32)
    workspace.FeedBlob("x", x)
    run("Allreduce", ["world", "x"], ["x"], engine="GLOO")
    np.testing.assert_array_equal(workspace.FetchBlob("x"), x)  # a world of one
    with pytest.raises(RuntimeError, match="unknown algorithm 'tree'"):
        run("Allreduce", ["world", "x"], ["x"], engine="GLOO", algorithm="tree")
    with pytest.raises(RuntimeError, match="root 3 is not a rank"):
        run("Broadcast", ["world", "x"], ["x"], engine="GLOO", root=3)
    workspace.FeedBlob("ints", np.array([1, 2], np.int32))
    with pytest.raises(RuntimeError, match="float32 and float64"):
        run("Allreduce", ["world", "ints"], ["ints"], engine="GLOO")
    with pytest.raises(RuntimeError, match="should hold"):
        run("Allreduce", ["x", "x"], ["x"], engine="GLOO")
    workspace.FeedBlob("x64", np.array([0.5, 1.5], np.float64))
    # The op is named by the context the net adds, on its own line.
    with pytest.raises(RuntimeError, match="'x64'.*one dtype(.|\n)*AllreduceCoalesced"):
        run("AllreduceCoalesced", ["world", "x", "x64"], ["x", "x64"], engine="GLOO")
    with pytest.raises(RuntimeError, match="float32 and float64"):
        run("AllreduceCoalesced", ["world", "x", "ints"], ["x", "ints"], engine="GLOO")
    with pytest.raises(RuntimeError, match="must be input 2"):
        run("AllreduceCoalesced", ["world", "x", "x64"], ["x", "ints"], engine="GLOO")
    with pytest.raises(RuntimeError, match="rank 2 is not in"):
        run("CreateCommonWorld", ["store"], ["w2"], size=2, rank=2)
    run("DestroyCommonWorld", ["world"], ["world"])
    run("DestroyCommonWorld", ["world"], ["world"])  # twice is harmless
    with pytest.raises(RuntimeError, match="holds no context"):
        run("Barrier", ["world"], [], engine="GLOO")
    workspace.ResetWorkspace()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
