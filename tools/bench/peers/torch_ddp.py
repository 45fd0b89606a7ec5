#!/usr/bin/python3
"""PyTorch peer of the multi-process benchmarks: DistributedDataParallel over
Gloo on the CPU, one thread per process.

    torch_ddp.py WORLD ITERS             # train the reference CNN
    torch_ddp.py WORLD ITERS allreduce   # time all_reduce of 25 MiB float32

Training: global batch 64 split evenly across the WORLD ranks, momentum SGD
(lr 0.05, 0.9), 5 untimed warm-up steps, then ITERS timed steps between two
barriers; rank 0 prints {"mode": "train", "img_per_s": ...}. Allreduce: a
buffer of 25 MiB of ones, 3 untimed reductions, then ITERS timed ones; rank
0 prints the mean milliseconds and the algorithm bandwidth (buffer bytes /
time). The last line of output is that JSON.
"""
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_fmnist import BATCH, CNN, LR, MOMENTUM, load  # noqa: E402

ALLREDUCE_MIB = 25


def time_allreduce(rank, world, iters):
    buffer = torch.ones(ALLREDUCE_MIB * 1024 * 1024 // 4)
    for _ in range(3):
        dist.all_reduce(buffer)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(buffer)
    seconds = (time.perf_counter() - start) / iters
    return dict(mode="allreduce", world=world, mib=ALLREDUCE_MIB, ms=round(seconds * 1e3, 2),
                algbw_GBps=round(buffer.numel() * 4 / seconds / 1e9, 2))


def time_training(rank, world, iters):
    torch.manual_seed(0)
    images, labels = (torch.from_numpy(a) for a in load("train"))
    model = torch.nn.parallel.DistributedDataParallel(CNN())
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    share = BATCH // world

    def step(i):
        # Consecutive global batches; each rank takes its slice of one.
        first = (i * BATCH + rank * share) % (len(images) - BATCH)
        optimizer.zero_grad()
        F.cross_entropy(model(images[first:first + share]),
                        labels[first:first + share]).backward()
        optimizer.step()

    for i in range(5):
        step(i)
    dist.barrier()
    start = time.perf_counter()
    for i in range(iters):
        step(i)
    dist.barrier()
    seconds = time.perf_counter() - start
    return dict(mode="train", world=world, global_batch=BATCH,
                img_per_s=round(iters * BATCH / seconds))


def rank_main(rank, world, iters, mode, init_file, results):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank,
                            world_size=world)
    measure = time_allreduce if mode == "allreduce" else time_training
    result = measure(rank, world, iters)
    if rank == 0:
        results.put(result)
    dist.destroy_process_group()


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != "allreduce"):
        raise SystemExit(__doc__)
    world, iters = int(sys.argv[1]), int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) == 4 else "train"
    context = mp.get_context("spawn")
    results = context.Queue()
    with tempfile.TemporaryDirectory() as scratch:
        init_file = os.path.join(scratch, "rendezvous")
        ranks = [context.Process(target=rank_main,
                                 args=(rank, world, iters, mode, init_file, results))
                 for rank in range(world)]
        for process in ranks:
            process.start()
        for process in ranks:
            process.join()
        failed = [r for r, p in enumerate(ranks) if p.exitcode != 0]
        if failed:
            raise SystemExit("torch_ddp: rank(s) {} failed".format(failed))
    print(json.dumps(results.get()))


if __name__ == "__main__":
    main()
