#!/usr/bin/python3
"""Quantized inference benchmark (issue 25): Caffe2's Int8Conv / Int8FC in
run_net beside PyTorch's quantized Conv2d / Linear (torch.ao, per-tensor
quint8 activations and qint8 weights, channels_last) on its x86 engine
(onednn) and on QNNPACK (the engine Caffe2's Int8 ops used), layer by
layer at batch 1 and 8: ResNet and MobileNetV2 convolutions and a
classifier. Each side runs in its own process with the same threads; best
of --rounds rounds; ratios are PyTorch's best engine's time over ours.

Doppio's weights are uint8 with zero point 128 (int8 after centring, as
PyTorch's), so on CPUs with VNNI its convolutions run on oneDNN's int8
kernels; elsewhere on its float32 path (the ISA is printed with the
results).

Run through tools/bench/int8_bench.sh, which builds run_net with -c opt.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import machine

# name, (C, H, W) input, M, kernel, stride, pad, group; FC: kernel 0.
LAYERS = [
    ("resnet 3x3 64 @56", (64, 56, 56), 64, 3, 1, 1, 1),
    ("resnet 3x3 128 @28", (128, 28, 28), 128, 3, 1, 1, 1),
    ("resnet 3x3 256 @14", (256, 14, 14), 256, 3, 1, 1, 1),
    ("resnet 1x1 256->64 @56", (256, 56, 56), 64, 1, 1, 0, 1),
    ("mobilenet 1x1 24->144 @56", (24, 56, 56), 144, 1, 1, 0, 1),
    ("mobilenet dw 3x3 144 @56", (144, 56, 56), 144, 3, 1, 1, 144),
    ("classifier FC 2048->1000", (2048, 1, 1), 1000, 0, 1, 0, 1),
]
X_SCALE, W_SCALE, Y_SCALE = 0.05, 0.01, 0.5


def layer_data(index, batch):
    name, (c, h, w), m, k, stride, pad, group = LAYERS[index]
    rng = np.random.RandomState(index)
    x = rng.randint(0, 256, size=(batch, h, w, c)).astype(np.uint8)
    wshape = (m, k, k, c // group) if k else (m, c)
    weights = rng.randint(64, 192, size=wshape).astype(np.uint8)
    bias = rng.randint(-1000, 1000, size=m).astype(np.int32)
    return x, weights, bias


# ---- the Doppio side ----

def _arg(name, value):
    if isinstance(value, float):
        return 'arg { name: "%s" f: %r }' % (name, value)
    if isinstance(value, bytes):
        return 'arg { name: "%s" s: "%s" }' % (name, "".join("\\%03o" % b for b in value))
    if isinstance(value, list):
        return " ".join('arg { name: "%s" ints: %d }' % (name, v) for v in value) \
            if name == "shape" else 'arg { name: "%s" %s }' % (
                name, " ".join("ints: %d" % v for v in value))
    return 'arg { name: "%s" i: %d }' % (name, value)


def _shape_arg(shape):
    return 'arg { name: "shape" %s }' % " ".join("ints: %d" % d for d in shape)


def _op(op_type, inputs, outputs, args):
    return "op { type: \"%s\" %s %s %s }" % (
        op_type, " ".join('input: "%s"' % i for i in inputs),
        " ".join('output: "%s"' % o for o in outputs), " ".join(args))


def write_doppio_nets(workdir, index, batch):
    x, weights, bias = layer_data(index, batch)
    _, _, m, k, stride, pad, group = LAYERS[index]
    init = ['name: "init"']
    for blob, value, scale, zp in (("X", x, X_SCALE, 128), ("W", weights, W_SCALE, 128)):
        init.append(_op("Int8GivenTensorFill", [], [blob],
                        [_shape_arg(value.shape), _arg("values", value.tobytes()),
                         _arg("Y_scale", scale), _arg("Y_zero_point", zp)]))
    init.append(_op("Int8GivenIntTensorFill", [], ["b"],
                    [_shape_arg(bias.shape),
                     'arg { name: "values" %s }' % " ".join("ints: %d" % v for v in bias),
                     _arg("Y_scale", X_SCALE * W_SCALE)]))
    quant = [_arg("Y_scale", Y_SCALE), _arg("Y_zero_point", 128)]
    if k:
        layer = _op("Int8Conv", ["X", "W", "b"], ["Y"],
                    [_arg("kernel", k), _arg("stride", stride), _arg("pad", pad),
                     _arg("group", group), 'arg { name: "order" s: "NHWC" }'] + quant)
    else:
        layer = _op("Int8FC", ["X", "W", "b"], ["Y"], quant)
    paths = {}
    for name, text in (("init", "\n".join(init)), ("net", 'name: "layer"\n' + layer)):
        paths[name] = os.path.join(workdir, "%s_%d_%d.pbtxt" % (name, index, batch))
        with open(paths[name], "w") as f:
            f.write(text)
    return paths


def run_doppio(args, index, batch, iters):
    paths = write_doppio_nets(args.workdir, index, batch)
    command = [args.run_net, "--init_net", paths["init"], "--net", paths["net"], "--nooptimize",
               "--warmup", str(args.warmup), "--iters", str(iters)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    match = re.search(r"([0-9.]+) ms/iter", out)
    if not match:
        raise RuntimeError("no timing in run_net's output:\n" + out)
    return float(match.group(1))


# ---- the PyTorch side (a subprocess, so each side owns its threads) ----

def torch_worker(args):
    import torch
    torch.set_num_threads(args.threads)
    torch.backends.quantized.engine = args.engine
    x, weights, bias = layer_data(args.layer, args.batch)
    _, _, m, k, stride, pad, group = LAYERS[args.layer]
    wq = torch._make_per_tensor_quantized_tensor(
        torch.from_numpy(weights.astype(np.int64) - 128).to(torch.int8), W_SCALE, 0)
    b = torch.from_numpy(bias.astype(np.float32) * X_SCALE * W_SCALE)
    xf = torch.from_numpy(x.astype(np.float32))
    if k:
        layer = torch.ao.nn.quantized.Conv2d(x.shape[3], m, k, stride=stride, padding=pad,
                                             groups=group)
        layer.set_weight_bias(wq.permute(0, 3, 1, 2).contiguous(), b)
        xf = xf.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    else:
        layer = torch.ao.nn.quantized.Linear(x.shape[3], m)
        layer.set_weight_bias(wq, b)
        xf = xf.reshape(x.shape[0], -1)
    layer.scale, layer.zero_point = Y_SCALE, 128
    xq = torch._make_per_tensor_quantized_tensor(xf.to(torch.uint8), X_SCALE, 128)
    with torch.no_grad():
        for _ in range(args.warmup):
            layer(xq)
        start = time.perf_counter()
        for _ in range(args.iters):
            layer(xq)
        seconds = time.perf_counter() - start
    print(json.dumps(dict(ms=seconds * 1e3 / args.iters, torch_version=torch.__version__)))


def run_torch(args, engine, index, batch, iters):
    command = [sys.executable, os.path.abspath(__file__), "--torch_worker", "--engine", engine,
               "--layer", str(index), "--batch", str(batch), "--iters", str(iters),
               "--warmup", str(args.warmup), "--threads", str(args.threads)]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run_net", help="run_net binary (-c opt)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.5, help="timed per configuration")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--engines", default="onednn,qnnpack")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "int8_bench.json"))
    parser.add_argument("--torch_worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--layer", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--iters", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        torch_worker(args)
        return
    engines = args.engines.split(",")
    print("machine: %s; %d thread(s)" % (machine.describe(), args.threads))
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        args.workdir = workdir
        for batch in [int(b) for b in args.batches.split(",")]:
            for index, layer in enumerate(LAYERS):
                probe = run_doppio(args, index, batch, 3)
                iters = max(5, int(args.seconds * 1e3 / max(probe, 1e-3)))
                best = {"doppio": float("inf")}
                best.update({e: float("inf") for e in engines})
                for _ in range(args.rounds):
                    best["doppio"] = min(best["doppio"], run_doppio(args, index, batch, iters))
                    for engine in engines:
                        ms = run_torch(args, engine, index, batch, iters)["ms"]
                        best[engine] = min(best[engine], ms)
                peer = min(best[e] for e in engines)
                rows.append(dict(layer=layer[0], batch=batch, ms=best, ratio=peer / best["doppio"]))
                print("batch %d  %-28s doppio %7.3f ms  %s  ratio %.2fx" % (
                    batch, layer[0], best["doppio"],
                    "  ".join("%s %7.3f ms" % (e, best[e]) for e in engines), rows[-1]["ratio"]))
    for batch in sorted({r["batch"] for r in rows}):
        ratios = [r["ratio"] for r in rows if r["batch"] == batch]
        print("batch %d geometric mean ratio: %.2fx" % (
            batch, float(np.exp(np.mean(np.log(ratios))))))
    result = dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
                  machine=machine.machine(), threads=args.threads, engines=engines, rows=rows)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
