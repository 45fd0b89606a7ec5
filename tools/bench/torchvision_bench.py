#!/usr/bin/python3
"""Inference of torchvision classification architectures imported from ONNX
(issue 24): each model is exported by torch.onnx (opset 13, random weights,
BatchNorm statistics away from the identity so folding changes the
weights), prepared by doppio.onnx.backend (the inference passes on, as by
default) and run beside PyTorch eager (eval, no_grad) on the same input at
224x224, batch 1 and batch 8. Both sides must agree on the output (within
1e-3 of its largest magnitude), else the model's row says so and the bench
fails.

Rounds alternate the two sides per model and batch; each side's best round
counts. The table gives ms per batch and PyTorch's time / ours, then the
geometric mean of the ratios per batch size.

Run through tools/bench/torchvision_bench.sh (it installs the packages).
"""
import argparse
import datetime
import io
import json
import math
import os
import sys
import time
import warnings

import numpy as np

import machine

HERE = os.path.dirname(os.path.abspath(__file__))

# torchvision constructor names: the list.
MODELS = ['resnet18', 'resnet50', 'mobilenet_v2', 'mobilenet_v3_large', 'densenet121',
          'efficientnet_b0', 'squeezenet1_0', 'googlenet', 'shufflenet_v2_x1_0',
          'regnet_y_400mf', 'convnext_tiny', 'vgg11']


def build_torch_model(torch, torchvision, name, seed):
    torch.manual_seed(seed)
    kwargs = dict(weights=None)
    if name == 'googlenet':
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                shape = module.running_mean.shape
                module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(shape, generator=generator) * 0.5 + 0.75)
    return model


def export_onnx(torch, model, x):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, x, buffer, opset_version=13, input_names=['x'],
                          output_names=['y'])
    return buffer.getvalue()


def best_ms(run, iters):
    """Best of `iters` timed calls, in ms."""
    best = math.inf
    for _ in range(iters):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def bench_model(args, torch, torchvision, backend, name, batch):
    model = build_torch_model(torch, torchvision, name, seed=24)
    x = torch.from_numpy(np.random.RandomState(batch).randn(batch, 3, 224, 224)
                         .astype(np.float32))
    row = dict(model=name, batch=batch)
    try:
        rep = backend.prepare(export_onnx(torch, model, x))
        x_np = x.numpy()
        ours = rep.run([x_np])[0]
    except Exception as error:  # a model we cannot import is a row, not a crash
        row['error'] = str(error).splitlines()[0][:300]
        return row
    with torch.no_grad():
        reference = model(x).numpy()
        row['max_abs_diff'] = float(np.abs(ours - reference).max())
        row['max_abs_output'] = float(np.abs(reference).max())
        row['agrees'] = row['max_abs_diff'] <= 1e-3 * row['max_abs_output'] + 1e-5

        def run_torch():
            model(x)

        def run_ours():
            rep.run([x_np])

        for _ in range(args.warmup):
            run_torch()
            run_ours()
        # Iterations per round aiming at --seconds per side.
        probe = best_ms(run_ours, 1)
        iters = max(2, int(args.seconds * 1e3 / max(probe, 1e-3)))
        torch_ms, ours_ms = math.inf, math.inf
        for _ in range(args.rounds):
            torch_ms = min(torch_ms, best_ms(run_torch, iters))
            ours_ms = min(ours_ms, best_ms(run_ours, iters))
    row.update(torch_ms=torch_ms, doppio_ms=ours_ms, ratio=torch_ms / ours_ms, iters=iters)
    return row


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float('nan')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--models', default=','.join(MODELS))
    parser.add_argument('--batches', default='1,8')
    parser.add_argument('--threads', type=int, default=os.cpu_count())
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=1.0,
                        help='about how long each side runs per round')
    parser.add_argument('--out', default=os.path.join(HERE, 'results', 'torchvision_bench.json'))
    args = parser.parse_args(argv)

    import torch
    import torchvision
    from doppio.onnx import backend
    torch.set_num_threads(args.threads)

    load_before = os.getloadavg()
    rows = []
    for batch in [int(b) for b in args.batches.split(',')]:
        for name in args.models.split(','):
            print('batch %d: %s' % (batch, name), file=sys.stderr, flush=True)
            rows.append(bench_model(args, torch, torchvision, backend, name, batch))
    result = dict(date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
                  machine=machine.machine(), threads=args.threads, rounds=args.rounds,
                  torch_version=torch.__version__, torchvision_version=torchvision.__version__,
                  load_average_before=load_before, load_average_after=os.getloadavg(),
                  rows=rows)
    batches = sorted({r['batch'] for r in rows})
    result['geomean'] = {str(b): geometric_mean([r['ratio'] for r in rows
                                                 if r['batch'] == b and 'ratio' in r])
                         for b in batches}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)

    print('torchvision_bench %s: %s, %d thread(s), torch %s, torchvision %s, best of %d rounds'
          % (result['date'], machine.describe(), args.threads, torch.__version__,
             torchvision.__version__, args.rounds))
    print()
    print('| model | batch | PyTorch ms | Doppio ms | PyTorch / Doppio | agrees |')
    print('|---|---:|---:|---:|---:|---|')
    failed = False
    for r in rows:
        if 'error' in r:
            failed = True
            print('| %s | %d | | | import failed: %s | |' % (r['model'], r['batch'], r['error']))
            continue
        failed |= not r['agrees']
        print('| %s | %d | %.2f | %.2f | %.2fx | %s |' % (
            r['model'], r['batch'], r['torch_ms'], r['doppio_ms'], r['ratio'],
            'yes' if r['agrees'] else 'NO (max diff %.2g of %.2g)' % (r['max_abs_diff'],
                                                                     r['max_abs_output'])))
    for b in batches:
        print('geometric mean at batch %d: %.2fx (%d models)' % (
            b, result['geomean'][str(b)], sum(1 for r in rows if r['batch'] == b and 'ratio' in r)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
