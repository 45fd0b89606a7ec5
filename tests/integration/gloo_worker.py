"""One rank of a Gloo collectives test, run as its own process by
gloo_collectives_test.py: python3 gloo_worker.py SPEC_JSON OUT_JSON.

It rendezvouses through the store named in the spec, runs the spec's
scenario and writes what it saw to OUT_JSON: the collectives' results, or
the error message and how long the failing step took."""
import atexit
import json
import os
import sys
import time

import numpy as np


# Registered before doppio's own exit handler, so it runs after it (atexit
# runs handlers last-in first-out): the time it writes is when the process
# really leaves, after doppio's drain of its common worlds.
_EXIT_RECORD = {}


def _record_exit_time():
    if "path" in _EXIT_RECORD:
        with open(_EXIT_RECORD["path"], "w") as out:
            out.write(repr(time.time()))


atexit.register(_record_exit_time)

from doppio import core, workspace  # noqa: E402

ALGORITHMS = ["ring", "ring_chunked", "halving_doubling", None]
LENGTH = 11  # odd, so chunked and halving/doubling splits are uneven


def known_inputs(rank):
    """The two tensors rank `rank` contributes; the test recomputes them."""
    a = (np.arange(LENGTH, dtype=np.float32) + 1.0) * (rank + 1)
    b = np.full((LENGTH,), 0.5 * rank - 1.0, dtype=np.float32)
    return a, b


def known_matrix(rank):
    """A second, differently shaped tensor for AllreduceCoalesced."""
    return np.arange(6, dtype=np.float32).reshape(2, 3) * (rank - 0.5) + rank * rank


def run(op_type, inputs, outputs, **kwargs):
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs, **kwargs))


def create_store(spec):
    store = spec["store"]
    if store["kind"] == "file":
        run("FileStoreHandlerCreate", [], ["store"], path=store["path"], prefix=spec["prefix"])
    else:
        run("RedisStoreHandlerCreate", [], ["store"], host=store["host"], port=store["port"],
            prefix=spec["prefix"])


def create_world(spec, outputs=("world",)):
    run("CreateCommonWorld", ["store"], list(outputs), name="world", size=spec["size"],
        rank=spec["rank"], interface="lo", timeout_ms=spec["timeout_ms"])


def collectives(spec, result):
    rank, size = spec["rank"], spec["size"]
    a, b = known_inputs(rank)
    for algorithm in ALGORITHMS:
        workspace.FeedBlob("a", a)
        workspace.FeedBlob("b", b)
        kwargs = {"algorithm": algorithm} if algorithm else {}
        run("Allreduce", ["world", "a", "b"], ["a", "b"], engine="GLOO", **kwargs)
        key = algorithm or "default"
        result["allreduce_" + key] = [workspace.FetchBlob("a").tolist(),
                                      workspace.FetchBlob("b").tolist()]
    workspace.FeedBlob("x", a)
    run("Broadcast", ["world", "x"], ["x"], engine="GLOO", root=size - 1)
    result["broadcast"] = workspace.FetchBlob("x").tolist()
    run("Barrier", ["world"], [], engine="GLOO")
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("b", b)
    run("Allgather", ["world", "a", "b"], ["gathered"], engine="GLOO")
    result["allgather"] = workspace.FetchBlob("gathered").tolist()
    workspace.FeedBlob("a", a)
    run("ReduceScatter", ["world", "a"], ["a"], engine="GLOO")
    result["reduce_scatter"] = workspace.FetchBlob("a").tolist()
    # With the optional status output a healthy collective reports 0.
    workspace.FeedBlob("a", a)
    run("Allreduce", ["world", "a"], ["a", "status"], engine="GLOO")
    result["status_ok"] = int(workspace.FetchBlob("status"))
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("m", known_matrix(rank))
    run("AllreduceCoalesced", ["world", "a", "m"], ["a", "m"], engine="GLOO")
    result["coalesced"] = [workspace.FetchBlob("a").tolist(), workspace.FetchBlob("m").tolist()]
    # The sharded optimizer state's pair: each rank's block of each sum, and
    # the blocks put back together (into zeroed tensors of the same shapes).
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("m", known_matrix(rank))
    run("ReduceScatterBlocks", ["world", "a", "m"], ["a_block", "m_block"], engine="GLOO")
    result["blocks"] = [workspace.FetchBlob("a_block").tolist(),
                        workspace.FetchBlob("m_block").tolist()]
    workspace.FeedBlob("a", np.zeros_like(a))
    workspace.FeedBlob("m", np.zeros_like(known_matrix(rank)))
    run("AllgatherBlocks", ["world", "a_block", "m_block", "a", "m"], ["a", "m"], engine="GLOO")
    result["gathered_blocks"] = [workspace.FetchBlob("a").tolist(),
                                 workspace.FetchBlob("m").tolist()]
    # A cloned world carries collectives of its own.
    run("CloneCommonWorld", ["world"], ["world2"])
    workspace.FeedBlob("a", a)
    run("Allreduce", ["world2", "a"], ["a"], engine="GLOO")
    result["allreduce_clone"] = workspace.FetchBlob("a").tolist()
    run("DestroyCommonWorld", ["world2"], ["world2"])
    run("Barrier", ["world"], [], engine="GLOO")
    run("DestroyCommonWorld", ["world"], ["world"])


def peer_lost(spec, result):
    """The last rank leaves (or idles) before the allreduce; the others run it."""
    # Everyone connected first: otherwise a rank that leaves at once can cut
    # off a peer still connecting, which fails the rendezvous instead.
    run("Barrier", ["world"], [], engine="GLOO")
    if spec["rank"] == spec["size"] - 1:
        if spec["quit"] == "exit":
            os._exit(0)  # no clean shutdown: sockets are closed by the kernel
        time.sleep(spec["idle_s"])
        os._exit(0)
    a, _ = known_inputs(spec["rank"])
    workspace.FeedBlob("a", a)
    outputs = ["a", "status"] if spec.get("status") else ["a"]
    start = time.time()
    try:
        run("Allreduce", ["world", "a"], outputs, engine="GLOO", algorithm="ring")
    finally:
        result["elapsed"] = time.time() - start
    if spec.get("status"):
        result["status"] = int(workspace.FetchBlob("status"))


def exit_order(spec, result, out_path):
    """Rank 0 ends first (returning normally, or with an uncaught exception
    when spec["rank0_raises"]); the others linger `linger_s` after the last
    collective, then note when they leave. A normal exit must wait for them
    (doppio drains every common world at exit, so no rank's exit can cut off
    a peer's last collective); an exit by exception must not."""
    run("Barrier", ["world"], [], engine="GLOO")
    a, _ = known_inputs(spec["rank"])
    workspace.FeedBlob("a", a)
    run("Allreduce", ["world", "a"], ["a"], engine="GLOO", algorithm="ring_chunked")
    result["allreduce"] = workspace.FetchBlob("a").tolist()
    if spec["rank"] == 0:
        _EXIT_RECORD["path"] = out_path + ".exit"
        if spec.get("rank0_raises"):
            with open(out_path, "w") as out:
                json.dump(result, out)
            raise ValueError("rank 0 fails on purpose")
        return
    time.sleep(spec["linger_s"])
    result["leaving_at"] = time.time()


def main():
    spec = json.loads(sys.argv[1])
    out_path = sys.argv[2]
    result = {}
    start = time.time()
    try:
        create_store(spec)
        create_world(spec)
        result["rendezvous_s"] = time.time() - start
        if spec["scenario"] == "collectives":
            collectives(spec, result)
        elif spec["scenario"] == "peer_lost":
            peer_lost(spec, result)
        elif spec["scenario"] == "exit_order":
            exit_order(spec, result, out_path)
        elif spec["scenario"] != "rendezvous":
            raise ValueError("unknown scenario " + spec["scenario"])
    except RuntimeError as error:
        result["error"] = str(error)
        result.setdefault("elapsed", time.time() - start)
    with open(out_path, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
