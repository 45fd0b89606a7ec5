#!/usr/bin/python3
"""Inference benchmark of the reference CNN (issue 13): run_net, as given and
with the --optimize passes switched on one by one, beside PyTorch eager
(torch.no_grad, eval mode) on the same weights, at batch 1 and batch 64.

Train-free: the predict + init nets are written here (text protobuf) with
fixed random weights and BatchNorm statistics; PyTorch's model is the
reference CNN of tools/bench/peers/torch_fmnist.py with those weights loaded.
The runs take turns for --rounds rounds; each configuration's best round
counts. Both sides must predict the same classes on the same images, else
the bench fails.

Run through tools/bench/inference_bench.sh, which builds run_net with -c opt.
"""
import argparse
import datetime
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_MODEL_DIR = os.path.join(HERE, 'peers')
FASHION_MNIST = '/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz'
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530

# run_net configurations, cumulative: each adds one lever to the previous.
DOPPIO_CONFIGS = [
    ('as given', ['--nooptimize']),
    ('+ Conv+BN fold', ['--optimize', '--optimize_passes=conv_bn']),
    ('+ Conv/FC+Relu fusion', ['--optimize', '--optimize_passes=conv_bn,activation']),
    ('+ in-place activations (all passes)',
     ['--optimize', '--optimize_passes=conv_bn,activation,inplace']),
]


# ---- the model ----

def make_weights(seed):
    """The reference CNN's parameters: PyTorch's default init ranges for
    Conv/Linear, and BatchNorm statistics away from the identity, so the
    fold changes the weights for real."""
    rng = np.random.RandomState(seed)

    def uniform(shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    w = {}
    for name, cin, cout in (('conv1', 1, 32), ('conv2', 32, 64)):
        w[name + '_w'] = uniform((cout, cin, 3, 3), cin * 9)
        w[name + '_b'] = uniform((cout,), cin * 9)
    for name, channels in (('bn1', 32), ('bn2', 64)):
        w[name + '_s'] = rng.uniform(0.5, 1.5, channels).astype(np.float32)
        w[name + '_b'] = rng.normal(0, 0.1, channels).astype(np.float32)
        w[name + '_rm'] = rng.normal(0, 0.1, channels).astype(np.float32)
        w[name + '_riv'] = rng.uniform(0.5, 1.5, channels).astype(np.float32)
    w['fc3_w'] = uniform((128, 3136), 3136)
    w['fc3_b'] = uniform((128,), 3136)
    w['pred_w'] = uniform((10, 128), 128)
    w['pred_b'] = uniform((10,), 128)
    return w


def text_arg(name, value):
    if isinstance(value, str):
        return 'arg { name: "%s" s: "%s" }' % (name, value)
    if isinstance(value, float):
        return 'arg { name: "%s" f: %r }' % (name, value)
    return 'arg { name: "%s" i: %d }' % (name, value)


def text_op(op_type, inputs, outputs, **args):
    parts = ['op {', ' type: "%s"' % op_type]
    parts += [' input: "%s"' % b for b in inputs]
    parts += [' output: "%s"' % b for b in outputs]
    parts += [' ' + text_arg(k, v) for k, v in sorted(args.items())]
    parts.append('}')
    return '\n'.join(parts)


def init_net_text(weights):
    ops = []
    for name, value in weights.items():
        shape = ''.join(' ints: %d' % d for d in value.shape)
        values = ''.join(' floats: %r' % float(v) for v in value.ravel())
        ops.append('op { type: "GivenTensorFill" output: "%s" arg { name: "shape"%s } '
                   'arg { name: "values"%s } }' % (name, shape, values))
    return 'name: "reference_cnn_init"\n' + '\n'.join(ops) + '\n'


def predict_net_text(weights):
    """What fmnist_train.py exports (brew's names and arguments), from
    standardized float images: Conv, SpatialBN(is_test), in-place Relu,
    MaxPool twice, then FC + in-place Relu, FC and Softmax."""
    ops = []
    previous = 'data'
    for i in (1, 2):
        conv, bn, pool = 'conv%d' % i, 'bn%d' % i, 'pool%d' % i
        ops.append(text_op('Conv', [previous, conv + '_w', conv + '_b'], [conv],
                           kernel=3, pad=1, order='NCHW'))
        ops.append(text_op('SpatialBN', [conv, bn + '_s', bn + '_b', bn + '_rm', bn + '_riv'],
                           [bn], is_test=1, epsilon=1e-5, order='NCHW'))
        ops.append(text_op('Relu', [bn], [bn]))
        ops.append(text_op('MaxPool', [bn], [pool], kernel=2, stride=2, order='NCHW'))
        previous = pool
    ops.append(text_op('FC', ['pool2', 'fc3_w', 'fc3_b'], ['fc3']))
    ops.append(text_op('Relu', ['fc3'], ['fc3']))
    ops.append(text_op('FC', ['fc3', 'pred_w', 'pred_b'], ['pred']))
    ops.append(text_op('Softmax', ['pred'], ['softmax']))
    header = ['name: "reference_cnn_predict"', 'external_input: "data"']
    header += ['external_input: "%s"' % name for name in weights]
    header.append('external_output: "softmax"')
    return '\n'.join(header) + '\n' + '\n'.join(ops) + '\n'


def test_images(count):
    """The first `count` Fashion-MNIST test images, standardized as in
    training; random ones in that range when the dataset is not installed."""
    if os.path.exists(FASHION_MNIST):
        with gzip.open(FASHION_MNIST) as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:count]
        x = x.astype(np.float32)
    else:
        x = np.random.RandomState(1).randint(0, 256, (count, 1, 28, 28)).astype(np.float32)
    return ((x / 255.0 - PIXEL_MEAN) / PIXEL_STD).astype(np.float32)


# ---- the PyTorch side (a subprocess, so each side owns its threads) ----

def torch_worker(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, TORCH_MODEL_DIR)
    from torch_fmnist import CNN
    torch.set_num_threads(args.threads)
    w = dict(np.load(os.path.join(args.workdir, 'weights.npz')))
    model = CNN()
    t = lambda name: torch.from_numpy(w[name])
    with torch.no_grad():
        for layer, conv in ((model.c1, 'conv1'), (model.c2, 'conv2')):
            layer.weight.copy_(t(conv + '_w'))
            layer.bias.copy_(t(conv + '_b'))
        for layer, bn in ((model.b1, 'bn1'), (model.b2, 'bn2')):
            layer.weight.copy_(t(bn + '_s'))
            layer.bias.copy_(t(bn + '_b'))
            layer.running_mean.copy_(t(bn + '_rm'))
            layer.running_var.copy_(t(bn + '_riv'))
        model.f1.weight.copy_(t('fc3_w'))
        model.f1.bias.copy_(t('fc3_b'))
        model.f2.weight.copy_(t('pred_w'))
        model.f2.bias.copy_(t('pred_b'))
    model.eval()
    x = torch.from_numpy(np.load(os.path.join(args.workdir, 'data_%d.npy' % args.batch)))
    with torch.no_grad():
        # The predict net ends in Softmax; the same work here.
        run = lambda: F.softmax(model(x), dim=1)
        for _ in range(args.warmup):
            run()
        start = time.perf_counter()
        for _ in range(args.iters):
            probs = run()
        seconds = time.perf_counter() - start
    if args.probs_out:
        np.save(args.probs_out, probs.numpy())
    print(json.dumps(dict(ms=seconds * 1e3 / args.iters, torch_version=torch.__version__)))


def run_torch(args, batch, iters, probs_out=None):
    command = [sys.executable, os.path.abspath(__file__), '--torch_worker',
               '--workdir', args.workdir, '--batch', str(batch), '--iters', str(iters),
               '--warmup', str(args.warmup), '--threads', str(args.threads)]
    if probs_out:
        command += ['--probs_out', probs_out]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# ---- the Doppio side ----

def run_doppio(args, batch, iters, extra, probs_out=None):
    command = [args.run_net, '--init_net', os.path.join(args.workdir, 'init_net.pbtxt'),
               '--net', os.path.join(args.workdir, 'predict_net.pbtxt'),
               '--input', 'data=' + os.path.join(args.workdir, 'data_%d.npy' % batch),
               '--warmup', str(args.warmup), '--iters', str(iters)] + extra
    if probs_out:
        command += ['--output', 'softmax=' + probs_out]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    match = re.search(r'([0-9.]+) ms/iter', out)
    if not match:
        raise RuntimeError('inference_bench: no ms/iter in run_net output:\n' + out)
    return float(match.group(1))


def check_predictions(args):
    """Every run_net configuration and PyTorch give the same classes (and
    probabilities within float tolerance) on the batch-64 images."""
    batch = max(args.batches)
    reference = os.path.join(args.workdir, 'torch_probs.npy')
    run_torch(args, batch, 1, probs_out=reference)
    expected = np.load(reference)
    report = {}
    for label, extra in DOPPIO_CONFIGS:
        probs_path = os.path.join(args.workdir, 'doppio_probs.npy')
        run_doppio(args, batch, 1, extra, probs_out=probs_path)
        probs = np.load(probs_path)
        same = float(np.mean(probs.argmax(1) == expected.argmax(1)))
        diff = float(np.abs(probs - expected).max())
        report[label] = dict(same_class_fraction=same, max_abs_prob_diff=diff)
        if same != 1.0 or diff > 1e-4:
            raise SystemExit('inference_bench: run_net (%s) and PyTorch disagree: %.4f of the '
                             'classes agree, max |probability difference| %.3g'
                             % (label, same, diff))
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--run_net', help='the run_net binary (built with -c opt)')
    parser.add_argument('--threads', type=int, default=os.cpu_count())
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--warmup', type=int, default=20)
    parser.add_argument('--batches', default='1,64')
    parser.add_argument('--seconds', type=float, default=1.0,
                        help='about how long each timed measurement runs')
    parser.add_argument('--out', default=os.path.join(HERE, 'results', 'inference_bench.json'))
    # The PyTorch subprocess.
    parser.add_argument('--torch_worker', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--workdir', help=argparse.SUPPRESS)
    parser.add_argument('--batch', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--iters', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--probs_out', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torch_worker:
        return torch_worker(args)
    if not args.run_net or not os.access(args.run_net, os.X_OK):
        parser.error('--run_net must name the run_net binary')
    args.batches = [int(b) for b in args.batches.split(',')]

    with tempfile.TemporaryDirectory() as workdir:
        args.workdir = workdir
        weights = make_weights(seed=13)
        np.savez(os.path.join(workdir, 'weights.npz'), **weights)
        with open(os.path.join(workdir, 'init_net.pbtxt'), 'w') as f:
            f.write(init_net_text(weights))
        with open(os.path.join(workdir, 'predict_net.pbtxt'), 'w') as f:
            f.write(predict_net_text(weights))
        for batch in args.batches:
            np.save(os.path.join(workdir, 'data_%d.npy' % batch), test_images(batch))

        load_before = os.getloadavg()
        agreement = check_predictions(args)
        # Iterations per measurement from one probe each, aiming at --seconds.
        iters = {}
        for batch in args.batches:
            ms_ours = run_doppio(args, batch, 10, [])
            ms_torch = run_torch(args, batch, 5)['ms']
            iters[batch] = (max(10, int(args.seconds * 1e3 / ms_ours)),
                            max(5, int(args.seconds * 1e3 / ms_torch)))
        runs = []
        torch_version = None
        for round_index in range(args.rounds):
            for batch in args.batches:
                for label, extra in DOPPIO_CONFIGS:
                    print('round %d/%d batch %d: doppio %s' % (round_index + 1, args.rounds,
                                                               batch, label), file=sys.stderr)
                    ms = run_doppio(args, batch, iters[batch][0], extra)
                    runs.append(dict(round=round_index, batch=batch, who='doppio',
                                     config=label, ms=ms, load=os.getloadavg()[0]))
                print('round %d/%d batch %d: pytorch' % (round_index + 1, args.rounds, batch),
                      file=sys.stderr)
                result = run_torch(args, batch, iters[batch][1])
                torch_version = result['torch_version']
                runs.append(dict(round=round_index, batch=batch, who='pytorch',
                                 config='eager, no_grad', ms=result['ms'],
                                 load=os.getloadavg()[0]))
        load_after = os.getloadavg()

    rows = []
    for batch in args.batches:
        best_torch = min(r['ms'] for r in runs if r['batch'] == batch and r['who'] == 'pytorch')
        configs = [('pytorch', 'eager, no_grad')] + [('doppio', c) for c, _ in DOPPIO_CONFIGS]
        for who, config in configs:
            ms = min(r['ms'] for r in runs
                     if r['batch'] == batch and r['who'] == who and r['config'] == config)
            rows.append(dict(batch=batch, who=who, config=config, ms_best=ms,
                             images_per_s=batch * 1e3 / ms, ratio_vs_torch=best_torch / ms))
    result = dict(date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
                  machine=machine.machine(), threads=args.threads,
                  rounds=args.rounds, warmup=args.warmup, iters=iters,
                  torch_version=torch_version, load_average_before=load_before,
                  load_average_after=load_after, agreement=agreement, rows=rows, runs=runs)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)

    print('inference_bench %s: %s, %d thread(s), torch %s, best of %d rounds'
          % (result['date'], machine.describe(), args.threads, torch_version, args.rounds))
    print('load average before %.2f, after %.2f' % (load_before[0], load_after[0]))
    print()
    print('| batch | runner | ms/batch | images/s | vs PyTorch |')
    print('|---:|---|---:|---:|---:|')
    for r in rows:
        runner = 'PyTorch eager' if r['who'] == 'pytorch' else 'run_net ' + r['config']
        print('| %d | %s | %.3f | %.0f | %.2fx |' % (r['batch'], runner, r['ms_best'],
                                                    r['images_per_s'], r['ratio_vs_torch']))
    print()
    print('predictions on %d images: every configuration agrees with PyTorch '
          '(max |probability difference| %.2g)'
          % (max(args.batches), max(a['max_abs_prob_diff'] for a in agreement.values())))
    print('results: %s' % args.out)


if __name__ == '__main__':
    main()
