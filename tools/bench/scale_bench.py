"""Scaling across processes on one host (issue 26), Doppio beside PyTorch's
gloo backend in one run, for each process count N:

  - allreduce bus bandwidth at several sizes: Doppio's Allreduce (engine
    GLOO, its default algorithm) and torch.distributed.all_reduce; bus
    bandwidth = bytes / time * 2 (N - 1) / N, as nccl-tests report it;
  - training throughput of an MLP (784-512-512-10, momentum SGD, global batch
    64 split over the ranks) and its scaling efficiency, throughput at N
    over N times throughput at 1 (on a host with fewer cores than N this
    measures how the ranks share it, not the network);
  - time to detect a dead peer: the last rank SIGKILLs itself between two
    allreduces; the time from its kill until the other ranks' allreduce
    fails (their largest).

    tools/bench/scale_bench.sh [--nprocs 1,2,4,8] [--iters K] [--out FILE]
"""
import argparse
import datetime
import json
import os
import signal
import sys
import time
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rank_helpers  # noqa: E402
from rank_helpers import BATCH  # noqa: E402

SIZES = [64 * 1024, 1024 * 1024, 25 * 1024 * 1024]  # bytes of float32
HIDDEN, WARMUP = 512, 3


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nprocs", default="1,2,4,8")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out")
    parser.add_argument("--worker", help="(internal) Doppio rank: result prefix")
    parser.add_argument("--mode", help="(internal) allreduce, train or dead_peer")
    return parser.parse_args()


# ---- Doppio ranks (under tools/launch.py) ----

def doppio_allreduce(args, rank, world):
    import numpy as np
    from doppio import core, distributed, workspace
    distributed.store_handler_from_env(workspace)
    distributed.common_world_from_env("store_handler", workspace, world="world",
                                      timeout_ms=60000)
    result = {}
    for size in SIZES:
        workspace.FeedBlob("x", np.ones(size // 4, np.float32))
        net = core.Net("allreduce_%d" % size)
        net.Allreduce(["world", "x"], ["x"], engine="GLOO")
        workspace.CreateNet(net)
        seconds = []
        for i in range(WARMUP + args.iters):
            start = time.perf_counter()
            workspace.RunNet(net.Name())
            seconds.append(time.perf_counter() - start)
        result[str(size)] = median(seconds[WARMUP:])
    return result


def doppio_train(args, rank, world):
    from doppio import data_parallel_model, distributed, model_helper, optimizer
    distributed.store_handler_from_env()
    model = model_helper.ModelHelper(name="scale_bench")
    rendezvous = None if world == 1 else dict(kv_handler="store_handler", shard_id=rank,
                                              num_shards=world, interface="lo",
                                              timeout_ms=60000)
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=rank_helpers.doppio_mlp(HIDDEN),
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.01, momentum=0.9),
        devices=[0], rendezvous=rendezvous, num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    step_s = rank_helpers.doppio_step_seconds(model, rank, world, args.iters, WARMUP)
    return dict(step_s=step_s)


def doppio_dead_peer(args, rank, world):
    import numpy as np
    from doppio import core, distributed, workspace
    distributed.store_handler_from_env(workspace)
    distributed.common_world_from_env("store_handler", workspace, world="world",
                                      timeout_ms=30000)
    workspace.FeedBlob("x", np.ones(1024, np.float32))
    op = core.CreateOperator("Allreduce", ["world", "x"], ["x"], engine="GLOO")
    for _ in range(5):
        workspace.RunOperatorOnce(op)
    if rank == world - 1:
        time.sleep(0.5)
        with open(args.worker + ".killed", "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        workspace.RunOperatorOnce(op)
    except RuntimeError:
        return dict(failed_at=time.time())
    return dict(failed_at=None)


def doppio_worker(args):
    from doppio import distributed
    rank, world = distributed.rank(), distributed.world_size()
    run = dict(allreduce=doppio_allreduce, train=doppio_train,
               dead_peer=doppio_dead_peer)[args.mode]
    rank_helpers.write_report(args.worker, rank, run(args, rank, world))
    os._exit(0)  # a dead peer's world cannot be drained


def run_ours(args, mode, world):
    return rank_helpers.launch_doppio(__file__, world, ["--mode", mode,
                                                        "--iters", str(args.iters)])


# ---- PyTorch ranks (torch.multiprocessing) ----

def torch_rank(rank, world, init_file, results, mode, iters):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    # The timeout Doppio's ranks use too (a silent peer fails after it).
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=30))
    if mode == "allreduce":
        result = {}
        for size in SIZES:
            x = torch.ones(size // 4)
            seconds = []
            for i in range(WARMUP + iters):
                start = time.perf_counter()
                dist.all_reduce(x)
                seconds.append(time.perf_counter() - start)
            result[str(size)] = median(seconds[WARMUP:])
    elif mode == "train":
        net = rank_helpers.torch_mlp(HIDDEN)
        model = torch.nn.parallel.DistributedDataParallel(net) if world > 1 else net
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        result = dict(step_s=rank_helpers.torch_step_seconds(model, opt, rank, world, iters,
                                                             WARMUP))
    else:
        x = torch.ones(1024)
        for _ in range(5):
            dist.all_reduce(x)
        if rank == world - 1:
            time.sleep(0.5)
            rank_helpers.put_and_flush(results, dict(rank=rank, killed=time.time()))
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(x)
            result = dict(failed_at=None)
        except RuntimeError:
            result = dict(failed_at=time.time())
    result["rank"] = rank
    rank_helpers.put_and_flush(results, result)
    os._exit(0)  # a dead peer's process group cannot be destroyed


def run_torch(args, mode, world):
    reports = rank_helpers.spawn_torch(torch_rank, world, (mode, args.iters))
    killed = next((r["killed"] for r in reports if "killed" in r), None)
    return [r for r in reports if "killed" not in r], killed


# ---- the run ----

def measure(args, world):
    row = {"world": world}
    if world > 1:
        ours, _ = run_ours(args, "allreduce", world)
        theirs, _ = run_torch(args, "allreduce", world)
        row["allreduce"] = {}
        for size in SIZES:
            factor = 2.0 * (world - 1) / world
            mine = max(r[str(size)] for r in ours)
            torch_s = max(r[str(size)] for r in theirs)
            row["allreduce"][size] = dict(ours_busbw=size / mine * factor / 1e9,
                                          torch_busbw=size / torch_s * factor / 1e9,
                                          ratio=torch_s / mine)
    ours, _ = run_ours(args, "train", world)
    theirs, _ = run_torch(args, "train", world)
    row["train"] = dict(ours=BATCH / max(r["step_s"] for r in ours),
                        torch=BATCH / max(r["step_s"] for r in theirs))
    if world > 1:
        row["dead_peer"] = {}
        for side, runner in (("ours", run_ours), ("torch", run_torch)):
            reports, killed = runner(args, "dead_peer", world)
            failed = [r["failed_at"] for r in reports if r.get("failed_at")]
            row["dead_peer"][side] = (max(failed) - killed) * 1e3 if failed and killed \
                else None
    return row


def main():
    args = parse_args()
    if args.worker:
        return doppio_worker(args)
    from machine import describe
    rows = [measure(args, int(n)) for n in args.nprocs.split(",")]
    base = {side: next((r["train"][side] for r in rows if r["world"] == 1), None)
            for side in ("ours", "torch")}
    print("scale_bench: %s" % describe())
    print("Allreduce bus bandwidth (GB/s; TCP loopback), ours / PyTorch gloo (PyTorch time / ours):")
    print("| N | " + " | ".join("%s KiB" % (s // 1024) for s in SIZES) + " |")
    print("|---|" + "---:|" * len(SIZES))
    for row in rows:
        if "allreduce" in row:
            print("| %d | " % row["world"] + " | ".join(
                "%.2f / %.2f (%.2fx)" % (c["ours_busbw"], c["torch_busbw"], c["ratio"])
                for c in (row["allreduce"][s] for s in SIZES)) + " |")
    print("MLP 784-%d-%d-10 training, global batch %d (images/s; efficiency vs N = 1):"
          % (HIDDEN, HIDDEN, BATCH))
    print("| N | Doppio | efficiency | PyTorch DDP | efficiency | PyTorch time / ours |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        t = row["train"]
        eff = lambda side: ("%.2f" % (t[side] / (row["world"] * base[side]))  # noqa: E731
                            if base[side] else "-")
        print("| %d | %.0f | %s | %.0f | %s | %.2fx |" % (
            row["world"], t["ours"], eff("ours"), t["torch"], eff("torch"),
            t["ours"] / t["torch"]))
    print("Dead peer (ms from the kill until the survivors' allreduce fails):")
    for row in rows:
        if "dead_peer" in row:
            d = row["dead_peer"]
            print("| %d | ours %s | PyTorch %s |" % (
                row["world"], "-" if d["ours"] is None else "%.0f" % d["ours"],
                "-" if d["torch"] is None else "%.0f" % d["torch"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(machine=describe(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
