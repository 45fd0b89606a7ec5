#!/usr/bin/python3
"""Peak memory of one training iteration (forward, backward, plain SGD) of
the ResNet-style net of python_api/examples/memonger_models.py
(num_blocks=8, channels=16, batch 32, 3x32x32 inputs, 10 classes), Doppio
without and with memonger beside PyTorch (run it through memory_bench.sh,
which builds what it needs):

    tools/python tools/bench/memory_bench.py [--batch 32] [--blocks 8]
        [--channels 16] [--out tools/bench/results/memory_bench.json]
    tools/python tools/bench/memory_bench.py --report_allocations
        [--devices 2] [--batch_alloc 64] [--warmup 2] [--iterations 10]
        [--threads_per_device 1]
        [--out_alloc tools/bench/results/memory_bench_allocations.json]

--report_allocations measures something else instead (issue 13): the CPU
allocator calls and bytes of each steady-state training iteration of the
reference CNN and MLP, 1 and --devices CPU devices, with and without
memonger, DB and fed input (memory_bench_allocations.py); it exits 1 when an
iteration after the warm-up allocates.

Every configuration runs in a fresh process of its own, so no run inherits
another's heap. Rows:
  doppio             the training net as built (AddGradientOperators,
                     build_sgd without momentum)
  doppio memonger    the same net through share_grad_blobs(...,
                     share_activations=True), no blob shapes (greedy by
                     liveness only)
  doppio memonger (shapes)  the same with blob_shapes taken from the plain
                     run, so the assignment is size aware
  pytorch            the same architecture in torch.nn (the peer, defined
                     in this file: no script in tools/bench/peers/ has it),
                     plain SGD; RSS only
  pytorch (profiler) the same run under torch.profiler with profile_memory
Measures, each taken from just before the first iteration to its end:
  allocator  Doppio: the CPU allocator's peak bytes minus the bytes it held
             before (parameters, BN statistics, inputs, learning rate): the
             activations and gradients the iteration needs at its worst
             moment, reported as parameter gradients + the rest. PyTorch:
             the profiler's per-op allocations summed in start order (bytes
             held at op boundaries), the nearest it offers to that count.
  RSS        peak resident set (VmHWM, reset via /proc/self/clear_refs just
             before the iteration) minus the resident set before it; the
             same for Doppio and PyTorch. It also sees memory no allocator
             count does (oneDNN's per-primitive buffers, malloc's slack).
Doppio's fillers are seeded, so every Doppio row must print the same loss
and parameter checksum (memonger may not change what the net computes).
"""
import argparse
import datetime
import gc
import json
import os
import subprocess
import sys

import machine
import memory_bench_allocations

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))
EXAMPLES = os.path.join(REPO_ROOT, 'python_api', 'examples')
NUM_CLASSES = 10
LEARNING_RATE = 0.1
IN_SHAPE = (3, 32, 32)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--blocks', type=int, default=8)
    parser.add_argument('--channels', type=int, default=16)
    parser.add_argument('--threads', type=int, default=2,
                        help="PyTorch's intra-op threads (Doppio uses its default)")
    parser.add_argument('--out', default=os.path.join(REPO_ROOT, 'tools', 'bench', 'results',
                                                      'memory_bench.json'))
    parser.add_argument('--skip_torch', action='store_true')
    parser.add_argument('--report_allocations', action='store_true',
                        help='print allocator calls per steady-state training iteration '
                        'of the reference CNN and MLP instead (the options below)')
    parser.add_argument('--devices', type=int, default=2,
                        help='--report_allocations: CPU devices of the data-parallel rows')
    parser.add_argument('--batch_alloc', type=int, default=64,
                        help='--report_allocations: global batch')
    parser.add_argument('--warmup', type=int, default=2,
                        help='--report_allocations: iterations not counted')
    parser.add_argument('--iterations', type=int, default=10,
                        help='--report_allocations: counted iterations')
    parser.add_argument('--threads_per_device', type=int, default=1,
                        help='--report_allocations: dag workers per device')
    parser.add_argument('--out_alloc', default=os.path.join(
        REPO_ROOT, 'tools', 'bench', 'results', 'memory_bench_allocations.json'))
    # Internal: one configuration in this (fresh) process; prints one JSON line.
    parser.add_argument('--child', choices=['doppio', 'torch', 'allocations'],
                        help=argparse.SUPPRESS)
    parser.add_argument('--memonger', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--shapes_file', help=argparse.SUPPRESS)
    parser.add_argument('--profile', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ('batch', 'blocks', 'channels', 'threads', 'devices', 'batch_alloc',
                 'iterations', 'threads_per_device'):
        if getattr(args, name) < 1:
            parser.error('--{} must be positive, got {}'.format(name, getattr(args, name)))
    if args.warmup < 0:
        parser.error('--warmup must be >= 0, got {}'.format(args.warmup))
    if args.batch_alloc % args.devices:
        parser.error('--batch_alloc {} does not split over {} devices'.format(
            args.batch_alloc, args.devices))
    return args


# ------------------------------------------------------------ RSS probes

def _status_kib(field):
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError('no {} in /proc/self/status'.format(field))


def reset_peak_rss():
    """Sets VmHWM back to the current RSS (Linux >= 4.0); False if refused,
    in which case the peak also covers the process's start-up."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


def rss_bytes():
    return _status_kib('VmRSS') * 1024


def peak_rss_bytes():
    return _status_kib('VmHWM') * 1024


def inputs(batch):
    import numpy as np
    rng = np.random.RandomState(0)
    data = rng.standard_normal((batch,) + IN_SHAPE).astype(np.float32)
    label = rng.randint(0, NUM_CLASSES, size=batch).astype(np.int32)
    return data, label


# ------------------------------------------------------------ Doppio child

def blob_bytes(workspace):
    """name -> nbytes of every tensor blob (mutexes and the like hold none)."""
    sizes = {}
    for name in workspace.Blobs():
        try:
            sizes[name] = workspace.FetchBlob(name).nbytes
        except RuntimeError:
            pass
    return sizes


def doppio_child(args):
    sys.path.insert(0, EXAMPLES)
    from doppio import model_helper, optimizer, workspace
    from memonger_models import add_resnet_style, add_softmax_loss

    model = model_helper.ModelHelper(name='resnet_train')
    logits = add_resnet_style(model, 'data', num_blocks=args.blocks, channels=args.channels,
                              num_classes=NUM_CLASSES)
    _, loss = add_softmax_loss(model, logits, 'label')
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=LEARNING_RATE)
    param_grads = sorted(str(g) for g in model.param_to_grad.values())

    result = dict(name='doppio', memonger=False, ops=len(model.net.Proto().op))
    if args.memonger:
        try:
            from doppio import memonger
        except ImportError as e:
            result.update(name='doppio memonger', error='doppio.memonger is missing: {}'.format(e))
            return result
        shapes = None
        if args.shapes_file:
            with open(args.shapes_file) as f:
                shapes = json.load(f)
        optimized = memonger.share_grad_blobs(
            model.net, [loss], param_grads, namescope='', share_activations=True,
            blob_shapes=shapes)
        model.net._net = optimized
        result.update(name='doppio memonger' + (' (shapes)' if shapes else ''), memonger=True,
                      size_aware=shapes is not None)

    # Seeded fillers give every process the same parameters, so the rows'
    # losses must agree: a check that memonger's rewrite computes the same.
    for index, op in enumerate(model.param_init_net.Proto().op):
        op.device_option.random_seed = 1000 + index
    data, label = inputs(args.batch)
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('data', data)
    workspace.FeedBlob('label', label)
    workspace.CreateNet(model.net)
    held_before = blob_bytes(workspace)
    gc.collect()

    rss_before = rss_bytes()
    reset_ok = reset_peak_rss()
    workspace.ResetCPUAllocatorPeak()
    before = workspace.GetCPUAllocatorStats()
    workspace.RunNet(model.net.Proto().name)
    after = workspace.GetCPUAllocatorStats()
    peak_rss = peak_rss_bytes()

    held_after = blob_bytes(workspace)
    made = {b: n for b, n in held_after.items() if b not in held_before}
    params = [str(p) for p in model.GetAllParams()]
    grads_bytes = sum(made.get(g, 0) for g in param_grads)
    result.update(
        loss=float(workspace.FetchBlob(str(loss))),
        # The updated parameters' sum: equal across rows when memonger's net
        # trains exactly as the plain one.
        param_checksum=float(sum(workspace.FetchBlob(p).astype('float64').sum()
                                 for p in sorted(str(p) for p in model.params))),
        bytes_before=before['current_bytes'],
        param_bytes=sum(held_before.get(p, 0) for p in params),
        input_bytes=held_before.get('data', 0) + held_before.get('label', 0),
        allocator_peak_delta=after['peak_bytes'] - before['current_bytes'],
        allocator_held_after_delta=after['current_bytes'] - before['current_bytes'],
        param_grad_bytes=grads_bytes,
        # Blobs the iteration made and keeps: activations and the gradients
        # between layers (shared ones under their __m{N}_shared names).
        activation_and_grad_blob_bytes=sum(made.values()) - grads_bytes,
        blobs_made=len(made),
        rss_before=rss_before, rss_peak_delta=peak_rss - rss_before, rss_peak_reset=reset_ok)
    if not args.memonger:
        result['blob_shapes'] = {b: list(workspace.FetchBlob(b).shape) for b in made}
    return result


# ------------------------------------------------------------ PyTorch peer

def torch_child(args):
    """The peer: memonger_models.add_resnet_style rebuilt in torch.nn, layer
    for layer (convs without bias before BN, ReLU in place where Doppio's is,
    a strided block with a 1x1 projection every 4th block from the second
    on, global average pool, FC), softmax cross-entropy, plain SGD."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    def conv_bn(dim_in, dim_out, kernel, stride):
        return nn.Sequential(nn.Conv2d(dim_in, dim_out, kernel, stride, kernel // 2, bias=False),
                             nn.BatchNorm2d(dim_out, eps=1e-5, momentum=0.1))

    class Block(nn.Module):
        def __init__(self, dim_in, dim_out, stride):
            super().__init__()
            self.conv1 = conv_bn(dim_in, dim_out, 3, stride)
            self.conv2 = conv_bn(dim_out, dim_out, 3, 1)
            self.proj = (conv_bn(dim_in, dim_out, 1, stride)
                         if stride != 1 or dim_in != dim_out else None)

        def forward(self, x):
            branch = self.conv2(F.relu(self.conv1(x), inplace=True))
            skip = x if self.proj is None else self.proj(x)
            return F.relu(branch + skip)

    class ResNetStyle(nn.Module):
        def __init__(self, blocks, channels):
            super().__init__()
            self.stem = conv_bn(IN_SHAPE[0], channels, 3, 1)
            layers, dim = [], channels
            for i in range(blocks):
                down = i > 0 and i % 4 == 0
                dim_out = dim * 2 if down else dim
                layers.append(Block(dim, dim_out, 2 if down else 1))
                dim = dim_out
            self.blocks = nn.Sequential(*layers)
            self.fc = nn.Linear(dim, NUM_CLASSES)

        def forward(self, x):
            x = self.blocks(F.relu(self.stem(x), inplace=True))
            return self.fc(x.mean(dim=(2, 3)))

    net = ResNetStyle(args.blocks, args.channels).train()
    opt = torch.optim.SGD(net.parameters(), lr=LEARNING_RATE)
    data, label = inputs(args.batch)
    x, y = torch.from_numpy(data), torch.from_numpy(label.astype('int64'))
    param_bytes = sum(t.numel() * t.element_size() for t in net.state_dict().values())
    gc.collect()

    def iteration():
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    grads_bytes = sum(p.numel() * p.element_size() for p in net.parameters())
    result = dict(name='pytorch', peer='torch.nn ResNetStyle (in memory_bench.py), torch ' +
                  torch.__version__, threads=args.threads, param_bytes=param_bytes,
                  input_bytes=data.nbytes + label.nbytes * 2, param_grad_bytes=grads_bytes)
    if args.profile:
        # torch's CPU allocator keeps no count, but its profiler records each
        # op's net allocations; their running sum in start order is the bytes
        # held at op boundaries (it misses what an op frees before it ends).
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            loss = iteration()
        held = peak = 0
        for event in sorted(prof.events(), key=lambda e: e.time_range.start):
            held += event.self_cpu_memory_usage
            peak = max(peak, held)
        result.update(name='pytorch (profiler)', loss=float(loss), profiler_peak_delta=peak,
                      profiler_held_after_delta=held)
        return result
    rss_before = rss_bytes()
    reset_ok = reset_peak_rss()
    loss = iteration()
    peak_rss = peak_rss_bytes()
    result.update(loss=float(loss), rss_before=rss_before, rss_peak_delta=peak_rss - rss_before,
                  rss_peak_reset=reset_ok)
    return result


# ------------------------------------------------------------ driver

def run_child(args, kind, extra=()):
    command = [sys.executable, os.path.abspath(__file__), '--child', kind,
               '--batch', str(args.batch), '--blocks', str(args.blocks),
               '--channels', str(args.channels), '--threads', str(args.threads)] + list(extra)
    what = ' '.join([kind] + list(extra))
    print('running {}'.format(what), file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    if result.returncode != 0:
        return dict(name=what, error='exit {}: {}'.format(result.returncode,
                                                         result.stderr.strip()[-1500:]))
    for line in reversed(result.stdout.strip().splitlines()):
        if line.startswith('{'):
            return json.loads(line)
    return dict(name=what, error='printed no JSON result: ' + result.stdout[-1500:])


def allocation_rows(args):
    """memory_bench_allocations.child in a fresh process: (rows, error)."""
    command = [sys.executable, os.path.abspath(__file__), '--child', 'allocations']
    for name in ('devices', 'batch_alloc', 'warmup', 'iterations', 'threads_per_device'):
        command += ['--' + name, str(getattr(args, name))]
    print('running the allocation count', file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    if result.returncode != 0:
        return None, 'exit {}: {}'.format(result.returncode, result.stderr.strip()[-1500:])
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{')], None


def mib(n):
    return '' if n is None else '{:.2f}'.format(n / 2.0**20)


def allocator_delta(row):
    """Doppio's allocator peak delta, or PyTorch's profiler estimate."""
    value = row.get('allocator_peak_delta')
    return row.get('profiler_peak_delta') if value is None else value


def table(rows):
    base = next((r for r in rows if r['name'] == 'doppio' and 'error' not in r), None)
    lines = ['| run | params MiB | param grads MiB | allocator peak delta MiB '
             '| activations+grads MiB | vs doppio | RSS peak delta MiB | loss | param sum after |',
             '|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in rows:
        if 'error' in r:
            lines.append('| {} | not run: {} ||||||||'.format(
                r['name'], r['error'].strip().splitlines()[-1][:200].replace('|', '/')))
            continue
        delta = allocator_delta(r)
        act = None if delta is None else delta - r['param_grad_bytes']
        vs = ''
        if act is not None and base is not None and r is not base:
            base_act = base['allocator_peak_delta'] - base['param_grad_bytes']
            vs = '{:+.0f}%'.format(100.0 * (act - base_act) / base_act)
        checksum = r.get('param_checksum')
        lines.append('| {} | {} | {} | {} | {} | {} | {} | {:.4f} | {} |'.format(
            r['name'], mib(r['param_bytes']), mib(r['param_grad_bytes']), mib(delta),
            mib(act), vs, mib(r.get('rss_peak_delta')), r['loss'],
            '' if checksum is None else '{:.6f}'.format(checksum)))
    return '\n'.join(lines)


def summarize(rows):
    by_name = {r['name']: r for r in rows if 'error' not in r}
    summary = {}
    plain = by_name.get('doppio')
    torch_rss = by_name.get('pytorch', {}).get('rss_peak_delta')
    torch_alloc = by_name.get('pytorch (profiler)', {}).get('profiler_peak_delta')
    for name in ('doppio', 'doppio memonger', 'doppio memonger (shapes)'):
        row = by_name.get(name)
        if row is None:
            continue
        s = summary[name] = {}
        if plain is not None and row is not plain:
            before = plain['allocator_peak_delta'] - plain['param_grad_bytes']
            after = row['allocator_peak_delta'] - row['param_grad_bytes']
            s['activation_grad_reduction'] = round(1 - after / before, 4)
            s['reduction_target_met'] = 1 - after / before >= 0.5
        if torch_alloc is not None:
            s['allocator_peak_below_pytorch_profiler'] = row['allocator_peak_delta'] < torch_alloc
        if torch_rss is not None:
            s['rss_peak_below_pytorch'] = row['rss_peak_delta'] < torch_rss
    return summary


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child == 'doppio':
        print(json.dumps(doppio_child(args)))
        return 0
    if args.child == 'torch':
        print(json.dumps(torch_child(args)))
        return 0
    if args.child == 'allocations':
        memory_bench_allocations.child(args)
        return 0
    if args.report_allocations:
        return memory_bench_allocations.report(args, lambda: allocation_rows(args))

    rows = [run_child(args, 'doppio')]
    shapes = rows[0].pop('blob_shapes', None)
    rows.append(run_child(args, 'doppio', ['--memonger']))
    if shapes:
        shapes_file = args.out + '.shapes.json'
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(shapes_file, 'w') as f:
            json.dump(shapes, f)
        rows.append(run_child(args, 'doppio', ['--memonger', '--shapes_file', shapes_file]))
        os.remove(shapes_file)
    if not args.skip_torch:
        rows.append(run_child(args, 'torch'))
        rows.append(run_child(args, 'torch', ['--profile']))

    summary = summarize(rows)
    report = dict(bench='memory_bench', date=datetime.datetime.now().isoformat(timespec='seconds'),
                  machine=machine.machine(),
                  config=dict(batch=args.batch, num_blocks=args.blocks, channels=args.channels,
                              input=list(IN_SHAPE), classes=NUM_CLASSES, lr=LEARNING_RATE),
                  rows=rows, summary=summary)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(report, f, indent=1)
    print('memory_bench: ResNet-style net, {} blocks x {} channels, batch {}, one training '
          'iteration; {}, load {:.2f}'.format(args.blocks, args.channels, args.batch,
                                              machine.describe(), os.getloadavg()[0]))
    print()
    print(table(rows))
    print()
    for name, s in summary.items():
        if 'activation_grad_reduction' in s:
            print('{}: {:.1f}% fewer activation+gradient bytes than doppio (target >= 50%: {})'
                  .format(name, 100 * s['activation_grad_reduction'],
                          'met' if s['reduction_target_met'] else 'NOT met'))
        if 'allocator_peak_below_pytorch_profiler' in s:
            print('{}: allocator peak below PyTorch\'s (profiler estimate): {}'.format(
                name, 'yes' if s['allocator_peak_below_pytorch_profiler'] else 'NO'))
        if 'rss_peak_below_pytorch' in s:
            print('{}: RSS peak delta below PyTorch\'s: {}'.format(
                name, 'yes' if s['rss_peak_below_pytorch'] else 'NO'))
    print('results: {}'.format(args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
