"""What the multi-process benches (zero_bench, scale_bench) share: the MLP
both frameworks train, the global batch each rank takes its rows of, and
starting the ranks -- Doppio's under tools/launch.py, PyTorch's with
torch.multiprocessing -- and collecting one JSON report per rank."""
import json
import os
import queue
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAUNCH = os.path.join(REPO, "tools", "launch.py")
D_IN, D_OUT, BATCH = 784, 10, 64


def split_batch(iteration, rank, world):
    """Rank `rank`'s rows of the global batch of `iteration` (random images
    and labels, the same in every process and framework)."""
    import numpy as np
    rng = np.random.RandomState(iteration)
    x = rng.randn(BATCH, D_IN).astype(np.float32)
    y = rng.randint(0, D_OUT, size=BATCH).astype(np.int32)
    rows = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    return x[rows], y[rows]


def doppio_mlp(hidden):
    """Parallelize's forward builder of the MLP 784 -> hidden -> hidden -> 10."""
    from doppio import brew

    def forward(model, loss_scale):
        h = brew.relu(model, brew.fc(model, "data", "fc1", D_IN, hidden), "r1")
        h = brew.relu(model, brew.fc(model, h, "fc2", hidden, hidden), "r2")
        logits = brew.fc(model, h, "fc3", hidden, D_OUT)
        _, loss = model.net.SoftmaxWithLoss([logits, "label"], ["softmax", "avg_loss"])
        return [model.net.Scale(loss, "scaled_loss", scale=loss_scale)]
    return forward


def torch_mlp(hidden):
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D_IN, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, D_OUT))


def doppio_step_seconds(model, rank, world, iters, warmup=3):
    """The median seconds of data_parallel_model.RunNet(model) on this rank's
    rows of each global batch (fed to device 0), after `warmup` steps."""
    from statistics import median
    from doppio import data_parallel_model, workspace
    seconds = []
    for i in range(warmup + iters):
        x, y = split_batch(i, rank, world)
        workspace.FeedBlob("cpu_0/data", x)
        workspace.FeedBlob("cpu_0/label", y)
        start = time.perf_counter()
        data_parallel_model.RunNet(model, 1)
        seconds.append(time.perf_counter() - start)
    return median(seconds[warmup:])


def torch_step_seconds(model, opt, rank, world, iters, warmup=3):
    """The median seconds of a training step (zero_grad, forward, backward,
    step) of `model` on this rank's rows, after `warmup` steps."""
    import torch
    from statistics import median
    loss_fn = torch.nn.CrossEntropyLoss()
    seconds = []
    for i in range(warmup + iters):
        x, y = split_batch(i, rank, world)
        x, y = torch.from_numpy(x), torch.from_numpy(y).long()
        start = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        seconds.append(time.perf_counter() - start)
    return median(seconds[warmup:])


def write_report(prefix, rank, report):
    """A Doppio rank's report, for launch_doppio to collect."""
    with open("%s.%d" % (prefix, rank), "w") as f:
        json.dump(report, f)


def launch_doppio(script, nprocs, args, timeout_s=900):
    """Runs `script --worker PREFIX args...` as nprocs ranks under
    tools/launch.py; returns the reports the ranks wrote (a rank that wrote
    none -- one killed on purpose -- is missing) and PREFIX.killed's value,
    if a rank wrote one."""
    with tempfile.TemporaryDirectory() as scratch:
        prefix = os.path.join(scratch, "result")
        subprocess.run([sys.executable, LAUNCH, "--nprocs", str(nprocs), "--grace_s", "60",
                        os.path.abspath(script), "--worker", prefix] + list(args),
                       timeout=timeout_s, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reports = []
        for rank in range(nprocs):
            if os.path.exists("%s.%d" % (prefix, rank)):
                with open("%s.%d" % (prefix, rank)) as f:
                    reports.append(json.load(f))
        killed = None
        if os.path.exists(prefix + ".killed"):
            with open(prefix + ".killed") as f:
                killed = float(f.read())
    return reports, killed


def put_and_flush(results, report):
    """Queue.put hands the report to a feeder thread: flush it before the
    process exits or is killed."""
    results.put(report)
    results.close()
    results.join_thread()


def spawn_torch(target, world, args, timeout_s=600):
    """Runs target(rank, world, init_file, results, *args) in `world`
    spawned processes (a gloo process group's file rendezvous at init_file);
    returns what they put on `results`, one report each (fewer when one was
    killed), within timeout_s."""
    import torch.multiprocessing as mp
    context = mp.get_context("spawn")
    results = context.Queue()
    reports = []
    with tempfile.TemporaryDirectory() as scratch:
        init_file = os.path.join(scratch, "rendezvous")
        ranks = [context.Process(target=target, args=(r, world, init_file, results) + tuple(args))
                 for r in range(world)]
        for process in ranks:
            process.start()
        deadline = time.time() + timeout_s
        while len(reports) < world and time.time() < deadline:
            try:
                reports.append(results.get(timeout=5))
            except queue.Empty:
                if all(not p.is_alive() for p in ranks):
                    break
        for process in ranks:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    return reports
