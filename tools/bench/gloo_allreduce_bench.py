"""Cross-process Allreduce benchmark (issue 7): 25 MiB of float32 between 2
processes on loopback, Doppio's Gloo Allreduce op (each algorithm) beside
PyTorch's Gloo all_reduce (tools/bench/peers/torch_ddp.py WORLD ITERS
allreduce), in alternating rounds of one run.

    tools/python tools/bench/gloo_allreduce_bench.py [--nprocs 2] [--mib 25]
        [--iters 20] [--warmup 3] [--rounds 3] [--store URL | --start_redis]
        [--out FILE] [--skip_torch]

Ours: tools/launch.py starts the ranks; each builds one net per algorithm
holding a single `Allreduce(engine=GLOO, algorithm=...)` on a tensor of
ones (what torch_ddp reduces), runs it --warmup times, meets at a Barrier,
then times --iters runs one by one. Rank 0 reports the median and mean.
GB/s is the algorithm bandwidth, buffer bytes / time, as torch_ddp prints
it. ours / PyTorch is PyTorch's time over ours: once with our median, once
with our mean (PyTorch prints only its mean over the iterations). Each
figure is the best round's: the lowest median per algorithm (with that
round's mean), and PyTorch's lowest mean.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAUNCH = os.path.join(REPO, "tools", "launch.py")
TORCH_DDP = os.path.join(HERE, "peers", "torch_ddp.py")
ALGORITHMS = ["ring", "ring_chunked", "halving_doubling"]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--mib", type=int, default=25)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", help="rendezvous store URL for tools/launch.py")
    parser.add_argument("--start_redis", action="store_true")
    parser.add_argument("--out", default=os.path.join(HERE, "results",
                                                      "gloo_allreduce_bench.json"))
    parser.add_argument("--skip_torch", action="store_true")
    parser.add_argument("--worker", metavar="RESULT_JSON",
                        help="(internal) run as a rank under tools/launch.py")
    args = parser.parse_args()
    for name in ("nprocs", "mib", "iters", "rounds"):
        if getattr(args, name) < 1:
            parser.error("--%s must be at least 1" % name)
    if args.warmup < 0:
        parser.error("--warmup must not be negative")
    return args


def worker(args):
    import numpy as np
    from doppio import core, distributed, workspace

    handler = distributed.store_handler_from_env()
    world = distributed.common_world_from_env(handler, timeout_ms=60000)
    count = args.mib * 1024 * 1024 // 4
    barrier = core.CreateOperator("Barrier", [world], [], engine="GLOO")
    report = {}
    for algorithm in ALGORITHMS:
        blob = "x_" + algorithm
        workspace.FeedBlob(blob, np.ones(count, dtype=np.float32))
        net = core.Net("allreduce_" + algorithm)
        net.Proto().op.extend([core.CreateOperator("Allreduce", [world, blob], [blob],
                                                   engine="GLOO", algorithm=algorithm)])
        # One net run many times keeps the op, and with it Gloo's algorithm
        # object and its registered buffers, as a training net would.
        workspace.CreateNet(net)
        name = net.Proto().name
        for _ in range(args.warmup):
            workspace.RunNet(name)
        workspace.RunOperatorOnce(barrier)
        seconds = []
        for _ in range(args.iters):
            start = time.perf_counter()
            workspace.RunNet(name)
            seconds.append(time.perf_counter() - start)
        # Ones summed over warmup + iters runs: a wrong sum shows here.
        expected = float(args.nprocs) ** (args.warmup + args.iters)
        got = workspace.FetchBlob(blob)
        # Exact for 2 or 4 ranks; other sizes round along the way.
        if not (abs(got[0] / expected - 1) < 1e-4 and abs(got[-1] / expected - 1) < 1e-4):
            raise SystemExit("allreduce %s: expected %g everywhere, got %g ... %g"
                             % (algorithm, expected, got[0], got[-1]))
        report[algorithm] = {"median_ms": statistics.median(seconds) * 1e3,
                             "mean_ms": statistics.mean(seconds) * 1e3,
                             "min_ms": min(seconds) * 1e3}
        workspace.FeedBlob(blob, np.zeros(1, dtype=np.float32))  # frees 25 MiB
    if distributed.rank() == 0:
        with open(args.worker, "w") as out:
            json.dump(report, out)


def run_ours(args):
    fd, result_path = tempfile.mkstemp(prefix="gloo_allreduce_bench_", suffix=".json")
    os.close(fd)
    try:
        command = [sys.executable, LAUNCH, "--nprocs", str(args.nprocs)]
        if args.store:
            command += ["--store", args.store]
        if args.start_redis:
            command += ["--start_redis"]
        command += [os.path.abspath(__file__), "--worker", result_path,
                    "--nprocs", str(args.nprocs), "--mib", str(args.mib),
                    "--iters", str(args.iters), "--warmup", str(args.warmup)]
        subprocess.run(command, check=True, timeout=600)
        with open(result_path) as f:
            return json.load(f)
    finally:
        os.unlink(result_path)


def run_torch(args):
    if args.mib != 25:
        raise SystemExit("torch_ddp.py measures 25 MiB only; run with --skip_torch for --mib %d"
                         % args.mib)
    output = subprocess.run(["/usr/bin/python3", TORCH_DDP, str(args.nprocs), str(args.iters),
                             "allreduce"], check=True, timeout=600, stdout=subprocess.PIPE,
                            universal_newlines=True).stdout
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("torch_ddp.py printed no JSON line:\n" + output)


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    args = parse_args()
    if args.worker:
        return worker(args)
    nbytes = args.mib * 1024 * 1024
    gbps = lambda ms: nbytes / (ms / 1e3) / 1e9  # noqa: E731
    rounds = []
    for round_index in range(args.rounds):
        entry = {"load_before": load(), "ours": run_ours(args)}
        if not args.skip_torch:
            entry["torch"] = run_torch(args)
        entry["load_after"] = load()
        rounds.append(entry)
        summary = ", ".join("%s %.1f ms" % (a, entry["ours"][a]["median_ms"]) for a in ALGORITHMS)
        if "torch" in entry:
            summary += ", PyTorch %.1f ms" % entry["torch"]["ms"]
        print("round %d (load %s -> %s): %s" % (round_index + 1, entry["load_before"],
                                                entry["load_after"], summary), flush=True)

    best = {a: min((r["ours"][a] for r in rounds), key=lambda m: m["median_ms"])
            for a in ALGORITHMS}
    torch_ms = None if args.skip_torch else min(r["torch"]["ms"] for r in rounds)
    print()
    print("Allreduce of %d MiB float32, %d processes, TCP loopback; best of %d rounds x %d "
          "iterations" % (args.mib, args.nprocs, args.rounds, args.iters))
    print("| run | median ms | mean ms | GB/s | ours / PyTorch (median) | ours / PyTorch (mean) |")
    print("|---|---:|---:|---:|---:|---:|")
    table = {}
    for algorithm in ALGORITHMS:
        m = best[algorithm]
        ratios = [None if torch_ms is None else torch_ms / m[key]
                  for key in ("median_ms", "mean_ms")]
        table[algorithm] = dict(m, GBps=gbps(m["median_ms"]), ratio_median=ratios[0],
                                ratio_mean=ratios[1])
        print("| Doppio Allreduce (GLOO, %s) | %.2f | %.2f | %.2f | %s | %s |"
              % (algorithm, m["median_ms"], m["mean_ms"], gbps(m["median_ms"]),
                 *("-" if r is None else "%.2fx" % r for r in ratios)))
    if torch_ms is not None:
        print("| PyTorch dist.all_reduce (gloo) | - | %.2f | %.2f | | |"
              % (torch_ms, gbps(torch_ms)))

    record = {"bench": "gloo_allreduce", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "nprocs": args.nprocs, "mib": args.mib, "iters": args.iters,
              "warmup": args.warmup, "best": table, "torch_best_ms": torch_ms,
              "torch_best_GBps": None if torch_ms is None else gbps(torch_ms), "rounds": rounds}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        json.dump(record, out, indent=1)
    print("\nresults: %s" % args.out)


if __name__ == "__main__":
    sys.exit(main())
