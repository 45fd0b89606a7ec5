#!/usr/bin/python3
"""PyTorch peer of the executor benchmark: eager per-operator overhead on a
1-element tensor, one thread.

    torch_overhead.py [N]

Times N in-place adds (x.add_(one)), best of 5 repetitions, and prints one
JSON line with microseconds per op. Doppio's counterpart is a net of N Add
ops on 1-element blobs (tools/bench/net_overhead.cc).
"""
import json
import sys
import time

import torch


def main():
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    torch.set_num_threads(1)
    x, one = torch.zeros(1), torch.ones(1)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(ops):
            x.add_(one)
        best = min(best, time.perf_counter() - start)
    print(json.dumps(dict(peer="pytorch-" + torch.__version__, ops=ops,
                          us_per_op=round(best / ops * 1e6, 3))))


if __name__ == "__main__":
    main()
