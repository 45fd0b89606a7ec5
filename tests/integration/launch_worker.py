"""One rank under tools/launch.py, for launch_test.py:
    launch.py --nprocs N launch_worker.py SCENARIO PID_DIR

Every rank first records its pid (and the pids of anything it starts) in
PID_DIR, so the test can check that none outlives the launcher.

  allreduce  rendezvous from the environment (doppio.distributed) and
             allreduce [rank, 1, rank^2]; prints "result RANK SIZE RUN_ID v0 v1 v2"
  allreduce_in_net  the same with the rendezvous ops added to an init net
  fail       rank 1 exits with code 3 at once; the other ranks start a
             `sleep` child and then wait in a rendezvous rank 1 never joins,
             so only the launcher can end them
"""
import os
import subprocess
import sys
import time

import numpy as np

from doppio import core, distributed, workspace


def record_pid(pid_dir, pid, what):
    with open(os.path.join(pid_dir, "%d.pid" % pid), "w") as f:
        f.write(what)


def allreduce(in_net):
    rank, size = distributed.rank(), distributed.world_size()
    # The torchrun names must agree with doppio's own.
    assert int(os.environ["RANK"]) == rank and int(os.environ["WORLD_SIZE"]) == size
    # Each rank's share of the host's cores.
    assert int(os.environ["DOPPIO_NUM_CORES"]) == max(1, len(os.sched_getaffinity(0)) // size)
    if in_net:
        init_net = core.Net("rendezvous")
        handler = distributed.store_handler_from_env(init_net)
        world = distributed.common_world_from_env(handler, init_net, timeout_ms=20000)
        assert [op.type for op in init_net.Proto().op] == [
            "FileStoreHandlerCreate" if distributed.store_url().startswith("file:")
            else "RedisStoreHandlerCreate", "CreateCommonWorld"]
        workspace.RunNetOnce(init_net)
    else:
        handler = distributed.store_handler_from_env()
        world = distributed.common_world_from_env(handler, timeout_ms=20000)
    workspace.FeedBlob("x", np.array([rank, 1.0, rank * rank], dtype=np.float32))
    workspace.RunOperatorOnce(core.CreateOperator("Allreduce", [world, "x"], ["x"],
                                                  engine="GLOO"))
    values = workspace.FetchBlob("x").tolist()
    print("result %d %d %s %s" % (rank, size, distributed.run_id(),
                                  " ".join("%g" % v for v in values)))


def fail(pid_dir):
    rank = distributed.rank()
    if rank == 1:
        sys.exit(3)
    child = subprocess.Popen(["sleep", "300"])
    record_pid(pid_dir, child.pid, "sleep child of rank %d" % rank)
    print("rank %d waiting" % rank)
    handler = distributed.store_handler_from_env()
    # Far past the test's limit: the launcher, not the timeout, must end it.
    distributed.common_world_from_env(handler, timeout_ms=600000)
    time.sleep(600)


def main():
    scenario, pid_dir = sys.argv[1], sys.argv[2]
    record_pid(pid_dir, os.getpid(), "rank %s" % os.environ.get("DOPPIO_RANK"))
    if scenario in ("allreduce", "allreduce_in_net"):
        allreduce(in_net=scenario == "allreduce_in_net")
    elif scenario == "fail":
        fail(pid_dir)
    else:
        raise SystemExit("unknown scenario " + scenario)


if __name__ == "__main__":
    main()
