#!/usr/bin/python3
"""Training throughput of the reference CNN and MLP on Fashion-MNIST, Doppio
beside PyTorch, one run each, one after the other (run it through
fmnist_bench.sh, which builds what it needs):

    tools/python tools/bench/fmnist_bench.py [--epochs 1] [--train_limit N]
        [--models cnn,mlp] [--out tools/bench/results/fmnist_bench.json]

Runs of the CNN, all with the global batch 64 and momentum SGD lr 0.05:
  doppio 1x2   python_api/examples/fmnist_train.py on 1 device, each op on
               2 intra-op threads (one dag worker)
  doppio 1x2 (2 workers)  1 device, 2 dag workers of 1 thread each: two
               independent ops (backward's weight and input gradients) at once
  doppio 2x1   2 devices (Parallelize_CPU), 1 worker of 1 thread each
  doppio 2 processes x 1 device  the example started by tools/launch.py
               as 2 shards of 1 device, 1 thread per op (gloo allreduce over
               loopback, as DDP); images/s from shard 0's epoch timer
  doppio 2 processes x 1 device (2 workers)  the same with 2 dag workers
               per shard, so the allreduces overlap the rest of backward
  doppio auto  --devices auto: the example times each split of the cores
               (doppio.auto_split) before training and trains with the fastest
  doppio Caffe2 default  2 devices with Parallelize's default
               num_threads_per_device=4 (the dag executor caps each CPU
               device's workers to its share of the cores)
  torch 2 thr  tools/bench/peers/torch_fmnist.py cnn, 2 threads
  torch DDP 2  tools/bench/peers/torch_ddp.py, 2 gloo processes of 1 thread
               (throughput only: it measures no accuracy)
Runs of the MLP (FC 784-256-128-10; torch_ddp has no MLP): doppio 2x1, 1x2,
1x2 (2 workers) and auto as above; torch_fmnist.py mlp with 2 threads and with
1 thread (on 2 cores the MLP's small GEMMs are faster on one thread).
Images/s is training only (not the DB build, tests or export): the mean
over all epochs for Doppio and torch_fmnist, torch_ddp's own timing for DDP.
--train_limit makes Doppio and torch_fmnist train on the first N images, for
quick checks; DDP then runs the same number of steps.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import machine

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))
PEER_DIR = os.path.join(REPO_ROOT, 'tools', 'bench', 'peers')
EXAMPLE = os.path.join(REPO_ROOT, 'python_api', 'examples', 'fmnist_train.py')
LAUNCH = os.path.join(REPO_ROOT, 'tools', 'launch.py')
FULL_TRAIN_IMAGES = 60000
GLOBAL_BATCH = 64


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--epochs', type=int, default=1)
    parser.add_argument('--train_limit', type=int, default=-1,
                        help='train on the first N images only (-1: all 60,000)')
    parser.add_argument('--models', default='cnn,mlp',
                        help='comma-separated: cnn, mlp (default both)')
    parser.add_argument('--out', default=os.path.join(REPO_ROOT, 'tools', 'bench', 'results',
                                                      'fmnist_bench.json'))
    parser.add_argument('--skip_torch', action='store_true',
                        help='run only the Doppio configurations')
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error('--epochs must be positive, got {}'.format(args.epochs))
    if args.train_limit == 0 or args.train_limit < -1:
        parser.error('--train_limit must be positive or -1, got {}'.format(args.train_limit))
    args.models = [m for m in args.models.split(',') if m]
    unknown = sorted(set(args.models) - {'cnn', 'mlp'})
    if unknown or not args.models:
        parser.error('--models takes cnn and/or mlp, got {!r}'.format(','.join(unknown)))
    return args


def load_average():
    return round(os.getloadavg()[0], 2)


def run(command, what, env=None):
    """Runs a benchmark process; its stdout, or an exit naming `what`."""
    print('running {}'.format(what), file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, env=env)
    if result.returncode != 0:
        raise SystemExit('fmnist_bench: {} failed (exit {}):\n{}'.format(
            what, result.returncode, result.stderr[-3000:]))
    return result.stdout


def last_json_line(text, what):
    for line in reversed(text.strip().splitlines()):
        if line.startswith('{'):
            return json.loads(line)
    raise SystemExit('fmnist_bench: {} printed no JSON result:\n{}'.format(what, text[-2000:]))


def doppio(args, model, devices, workers, intra_op_threads, workdir, processes=1, label=None):
    """One run of the example; devices 'auto' lets it pick the split;
    `label` names the row instead of the split."""
    what = 'doppio {} {} device(s) x {} worker(s) x {} thread(s) per op'.format(
        model, devices, workers, intra_op_threads)
    command = [sys.executable, EXAMPLE, '--model', model, '--epochs', str(args.epochs),
               '--devices', str(devices), '--train_limit', str(args.train_limit),
               '--workdir', workdir, '--no_progress']
    if devices == 'auto':
        what = 'doppio {} --devices auto'.format(model)
    else:
        command += ['--num_threads_per_device', str(workers),
                    '--intra_op_threads', str(intra_op_threads)]
    if processes > 1:
        # Shard 0 writes summary.json; its epoch time is the global step's.
        command[1:1] = [LAUNCH, '--nprocs', str(processes)]
        what = 'doppio {} processes x {}'.format(processes, what[len('doppio '):])
    before = load_average()
    run(command, what)
    with open(os.path.join(workdir, 'summary.json')) as f:
        summary = json.load(f)
    seconds = sum(e['seconds'] for e in summary['epochs'])
    steps = summary['train_images'] // GLOBAL_BATCH
    picked = (summary.get('auto_split') or {}).get('picked')
    if picked:
        name = 'doppio auto (picked {})'.format(picked)
        devices = summary['devices']
        workers = summary['num_threads_per_device']
        intra_op_threads = summary['intra_op_threads']
    else:
        name = 'doppio {} device(s) x {} thread(s)'.format(devices, workers * intra_op_threads)
        if processes > 1:
            name = 'doppio {} processes x {} device(s)'.format(processes, devices)
        if workers > 1:
            name += ' ({} workers)'.format(workers)
    if label:
        name = label
    return dict(name=name, model=model, what=what, processes=processes, devices=devices,
                workers_per_device=workers, intra_op_threads=intra_op_threads,
                auto_split=summary.get('auto_split'),
                img_per_s=round(steps * GLOBAL_BATCH * args.epochs / seconds),
                test_acc=summary['final_test_accuracy'],
                epochs=[dict(epoch=e['epoch'], img_per_s=e['img_per_s'],
                             test_acc=e['test_acc']) for e in summary['epochs']],
                load_before=before, load_after=load_average())


def torch_single(args, model, threads):
    what = 'pytorch {} thread(s) (torch_fmnist.py {})'.format(threads, model)
    before = load_average()
    command = ['/usr/bin/python3', os.path.join(PEER_DIR, 'torch_fmnist.py'), model,
               str(args.epochs), str(threads), '--train_limit', str(args.train_limit)]
    result = last_json_line(run(command, what), what)
    seconds = sum(e['seconds'] for e in result['epochs'])
    images = (args.train_limit if args.train_limit > 0 else FULL_TRAIN_IMAGES) * args.epochs
    return dict(name='pytorch {} thread{}'.format(threads, 's' if threads > 1 else ''),
                model=model, what=what, peer=result['peer'], threads=threads,
                img_per_s=round(images / seconds), test_acc=result['epochs'][-1]['test_acc'],
                epochs=result['epochs'], load_before=before, load_after=load_average())


def torch_ddp(args):
    what = 'pytorch DDP 2 processes (torch_ddp.py)'
    images = args.train_limit if args.train_limit > 0 else FULL_TRAIN_IMAGES
    iters = images // GLOBAL_BATCH * args.epochs
    before = load_average()
    result = last_json_line(run(['/usr/bin/python3', os.path.join(PEER_DIR, 'torch_ddp.py'),
                                 '2', str(iters)], what), what)
    return dict(name='pytorch DDP 2x1', model='cnn', what=what, img_per_s=result['img_per_s'],
                test_acc=None, steps=iters, load_before=before, load_after=load_average())


def model_rows(args, model, scratch):
    """Every run of one model, Doppio's first."""
    def workdir(name):
        return os.path.join(scratch, '{}_{}'.format(model, name))
    rows = []
    if model == 'cnn':
        rows.append(doppio(args, model, 1, 1, 2, workdir('1x2')))
        rows.append(doppio(args, model, 1, 2, 1, workdir('1x2_workers')))
        rows.append(doppio(args, model, 2, 1, 1, workdir('2x1')))
        rows.append(doppio(args, model, 1, 1, 1, workdir('2_processes'), processes=2))
        rows.append(doppio(args, model, 1, 2, 1, workdir('2_processes_workers'), processes=2))
        rows.append(doppio(args, model, 'auto', 1, 1, workdir('auto')))
        # What a Caffe2 script gets: Parallelize's num_threads_per_device=4
        # on 2 devices, intra-op threads left to the runtime.
        rows.append(doppio(args, model, 2, 4, 0, workdir('caffe2_default'),
                           label='doppio Caffe2 default (2 devices, 4 threads asked)'))
        if not args.skip_torch:
            rows.append(torch_single(args, model, 2))
            rows.append(torch_ddp(args))
    else:
        rows.append(doppio(args, model, 2, 1, 1, workdir('2x1')))
        rows.append(doppio(args, model, 1, 1, 2, workdir('1x2')))
        rows.append(doppio(args, model, 1, 2, 1, workdir('1x2_workers')))
        rows.append(doppio(args, model, 'auto', 1, 1, workdir('auto')))
        if not args.skip_torch:
            rows.append(torch_single(args, model, 2))
            rows.append(torch_single(args, model, 1))
    return rows


def ratio(row, reference):
    if not reference or not row['name'].startswith('doppio'):
        return '-'
    return '{:.2f}'.format(row['img_per_s'] / reference)


def table(rows, best_torch, ddp):
    """best_torch: {model: PyTorch's best images/s}; ddp: DDP's (CNN)."""
    lines = ['| model | run | images/s | test accuracy | ours / PyTorch best | ours / DDP 2x1 '
             '| load avg before, after |',
             '|---|---|---:|---:|---:|---:|---|']
    for row in rows:
        accuracy = '{:.4f}'.format(row['test_acc']) if row['test_acc'] is not None else '-'
        lines.append('| {} | {} | {} | {} | {} | {} | {}, {} |'.format(
            row['model'].upper(), row['name'], row['img_per_s'], accuracy,
            ratio(row, best_torch.get(row['model'])),
            ratio(row, ddp if row['model'] == 'cnn' else None),
            row['load_before'], row['load_after']))
    return '\n'.join(lines)


def best_rate(rows, model, prefix, **match):
    rates = [r['img_per_s'] for r in rows if r['model'] == model and
             r['name'].startswith(prefix) and
             all(r.get(key) == value for key, value in match.items())]
    return max(rates, default=None)


def summarize(rows):
    """The ratios the issue's targets are about, per model."""
    result = {}
    for model in sorted({r['model'] for r in rows}):
        torch_best = best_rate(rows, model, 'pytorch')
        ours_best = best_rate(rows, model, 'doppio')
        auto = next((r for r in rows if r['model'] == model and r.get('auto_split')), None)
        entry = dict(pytorch_best_img_per_s=torch_best, doppio_best_img_per_s=ours_best,
                     ratio_doppio_best_over_pytorch_best=round(ours_best / torch_best, 3)
                     if torch_best else None)
        if auto is not None:
            entry.update(auto_picked=auto['auto_split']['picked'],
                         doppio_auto_img_per_s=auto['img_per_s'],
                         ratio_doppio_auto_over_pytorch_best=round(
                             auto['img_per_s'] / torch_best, 3) if torch_best else None)
        torch_2 = best_rate(rows, model, 'pytorch 2 threads')
        if torch_2:
            entry['pytorch_2_threads_img_per_s'] = torch_2
            entry['ratio_doppio_best_over_pytorch_2_threads'] = round(ours_best / torch_2, 3)
        result[model] = entry
    return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    for peer in ('torch_fmnist.py', 'torch_ddp.py'):
        if not args.skip_torch and not os.path.exists(os.path.join(PEER_DIR, peer)):
            raise SystemExit('fmnist_bench: the PyTorch peer {} is missing'.format(
                os.path.join(PEER_DIR, peer)))
    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        # The DBs are built again in each run's workdir; that is outside the
        # timed training loop.
        for model in args.models:
            rows += model_rows(args, model, scratch)
    per_model = summarize(rows)
    best_torch = {m: v['pytorch_best_img_per_s'] for m, v in per_model.items()}
    ddp = best_rate(rows, 'cnn', 'pytorch DDP')
    processes = [r['img_per_s'] for r in rows if r.get('processes', 1) > 1]
    ours_2_processes = max(processes, default=None)
    cnn = per_model.get('cnn', {})
    result = dict(
        date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
        machine=machine.machine(), epochs=args.epochs,
        train_limit=args.train_limit, global_batch=GLOBAL_BATCH, models=args.models,
        rows=rows, per_model=per_model,
        # The CNN's figures under their earlier names, for older readers.
        pytorch_best_img_per_s=cnn.get('pytorch_best_img_per_s'),
        doppio_best_img_per_s=cnn.get('doppio_best_img_per_s'),
        ratio_doppio_best_over_pytorch_best=cnn.get('ratio_doppio_best_over_pytorch_best'),
        pytorch_ddp_img_per_s=ddp, doppio_2_processes_img_per_s=ours_2_processes,
        ratio_doppio_2_processes_over_ddp=round(ours_2_processes / ddp, 3)
        if ddp and ours_2_processes else None,
        seconds=round(time.perf_counter() - start, 1))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)
    print('fmnist_bench {}: {}, {} epoch(s){}'.format(
        result['date'], machine.describe(), args.epochs,
        ', first {} training images'.format(args.train_limit) if args.train_limit > 0 else ''))
    print()
    print(table(rows, best_torch, ddp))
    print()
    for model, entry in per_model.items():
        if entry.get('auto_picked'):
            print('{}: --devices auto picked {}'.format(model.upper(), entry['auto_picked']))
        if entry['ratio_doppio_best_over_pytorch_best']:
            print('{}: ours best / PyTorch best: {:.2f} (target >= 1.5)'.format(
                model.upper(), entry['ratio_doppio_best_over_pytorch_best']))
    if result['ratio_doppio_2_processes_over_ddp']:
        print('CNN: ours best 2 processes x 1 device / PyTorch DDP 2 processes: {:.2f} '
              '(target >= 1.3)'.format(result['ratio_doppio_2_processes_over_ddp']))
    print('results: {}'.format(args.out))
    return result


if __name__ == '__main__':
    main()
