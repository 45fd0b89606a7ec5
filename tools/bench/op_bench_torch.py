"""PyTorch peer of op_bench: times the same ops at the same shapes.

Conv (F.conv2d), SpatialBN (F.batch_norm in training mode) and FC (F.linear)
at the reference CNN's shapes, forward and backward, with the same thread
count as Doppio's run. Prints one JSON object whose case names and passes
match op_bench's, so op_bench.sh can join the two.

Forward runs under no_grad (like Doppio's forward op, it saves nothing for
a backward). Backward is torch.autograd.grad of a fresh forward, timed alone:
it returns every input gradient (dX, dW, db / dscale, dbias), which is what
Doppio's gradient op computes; nothing accumulates into .grad.

Run with Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

BATCH = 64


def measure(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return min(seconds), statistics.median(seconds)


def measure_backward(forward, inputs, warmup, reps, generator):
    """Times autograd.grad of forward(*inputs) alone, a new graph each run."""
    with torch.enable_grad():
        grad_out = torch.rand(forward(*inputs).shape, generator=generator) * 2 - 1
    seconds = []
    for i in range(warmup + reps):
        with torch.enable_grad():
            y = forward(*inputs)
            start = time.perf_counter()
            torch.autograd.grad(y, inputs, grad_out)
            elapsed = time.perf_counter() - start
        if i >= warmup:
            seconds.append(elapsed)
    return min(seconds), statistics.median(seconds)


def uniform(shape, low, high, generator):
    return torch.rand(shape, generator=generator) * (high - low) + low


def conv_case(name, cin, cout, size, generator):
    x = uniform((BATCH, cin, size, size), -1, 1, generator)
    w = uniform((cout, cin, 3, 3), -1, 1, generator)
    b = uniform((cout,), -1, 1, generator)

    def forward(x, w, b):
        return F.conv2d(x, w, b, stride=1, padding=1)

    return name, "Conv", forward, [x, w, b]


def bn_case(name, channels, size, generator):
    x = uniform((BATCH, channels, size, size), -1, 1, generator)
    scale = uniform((channels,), 0.5, 1.5, generator)
    bias = uniform((channels,), -1, 1, generator)
    running_mean = torch.zeros(channels)
    running_var = torch.ones(channels)

    # Caffe2's momentum 0.9 is PyTorch's 0.1.
    def forward(x, scale, bias):
        return F.batch_norm(x, running_mean, running_var, scale, bias,
                            training=True, momentum=0.1, eps=1e-5)

    return name, "SpatialBN", forward, [x, scale, bias]


def fc_case(name, fin, fout, generator):
    x = uniform((BATCH, fin), -1, 1, generator)
    w = uniform((fout, fin), -1, 1, generator)
    b = uniform((fout,), -1, 1, generator)
    return name, "FC", F.linear, [x, w, b]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0,
                        help="intra-op threads (0: every core)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", default="",
                        help="comma-separated case names (default all)")
    args = parser.parse_args()
    threads = args.threads or os.cpu_count()
    torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(1234)

    cases = [
        conv_case("conv1", 1, 32, 28, generator),
        bn_case("bn1", 32, 28, generator),
        conv_case("conv2", 32, 64, 14, generator),
        bn_case("bn2", 64, 14, generator),
        fc_case("fc1", 64 * 7 * 7, 128, generator),
        fc_case("fc2", 128, 10, generator),
    ]
    only = [name for name in args.only.split(",") if name]
    unknown = set(only) - {case[0] for case in cases}
    if unknown:
        parser.error("--only: no case named %s" % ", ".join(sorted(unknown)))

    results = []
    for name, op, forward, inputs in cases:
        if only and name not in only:
            continue
        with torch.no_grad():
            best, median = measure(lambda: forward(*inputs), args.warmup, args.reps)
        results.append({"name": name, "pass": "forward", "op": op,
                        "ms_best": best * 1e3, "ms_median": median * 1e3})
        grad_inputs = [t.clone().requires_grad_(True) for t in inputs]
        best, median = measure_backward(forward, grad_inputs, args.warmup, args.reps,
                                        generator)
        results.append({"name": name, "pass": "backward", "op": op,
                        "ms_best": best * 1e3, "ms_median": median * 1e3})

    print(json.dumps({
        "tool": "op_bench_torch",
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "warmup": args.warmup,
        "reps": args.reps,
        "batch": BATCH,
        "results": results,
    }))


if __name__ == "__main__":
    main()
