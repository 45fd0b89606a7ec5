#!/usr/bin/python3
"""Training throughput of the reference CNN on GPUs, Doppio beside PyTorch,
one run each, one after the other (run it through gpu_train_bench.sh, which
builds what it needs):

    tools/python tools/bench/gpu_train_bench.py [--max_gpus N] [--steps 1000]
        [--warmup 50] [--batch 64] [--no_nccl] [--torch_python /usr/bin/python3]
        [--out tools/bench/results/gpu_train_bench.json]

Runs, each in a fresh process, all with the global batch --batch, momentum
SGD lr 0.05 (docs/DESIGN.md section 8) and the same Fashion-MNIST images:
  doppio N GPU   data_parallel_model.Parallelize_GPU on GPUs 0..N-1, NCCL
                 collectives (NCCLAllreduce of each gradient), each GPU fed
                 its batch / N images per step with FeedBlob
  doppio N GPU (no NCCL)  --no_nccl adds these: the Copy + Sum tree
  torch 1 GPU    the peer's CNN (tools/bench/peers/torch_fmnist.py) on cuda:0
  torch N GPU    the same model in nn.DataParallel over GPUs 0..N-1
for N from 1 to --max_gpus (default: every GPU both frameworks see).
Images/s counts the timed steps only (after --warmup untimed ones), ending
when the GPUs are done (Doppio fetches the loss, PyTorch synchronizes). The
ratio column is ours / PyTorch's on the same number of GPUs.

With no usable GPU for Doppio, or a PyTorch without CUDA (--torch_python
picks another interpreter's, e.g. a CUDA build of PyTorch), it prints one
"gpu_train_bench: SKIP ..." line and exits 0.
"""
import argparse
import datetime
import gzip
import json
import os
import subprocess
import sys
import time

import numpy as np

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          '..', '..'))
PEER_DIR = os.path.join(REPO_ROOT, 'tools', 'bench', 'peers')
DATA_DIR = '/usr/share/datasets/fashion-mnist'
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530
LR, MOMENTUM = 0.05, 0.9


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--max_gpus', type=int, default=0,
                        help='largest GPU count to run (0: all that both frameworks see)')
    parser.add_argument('--steps', type=int, default=1000, help='timed steps per run')
    parser.add_argument('--warmup', type=int, default=50, help='untimed steps first')
    parser.add_argument('--batch', type=int, default=64, help='global batch')
    parser.add_argument('--no_nccl', action='store_true',
                        help='also time Doppio with the Copy + Sum tree instead of NCCL')
    parser.add_argument('--torch_python', default='/usr/bin/python3',
                        help='interpreter whose PyTorch (with CUDA) runs the peer')
    parser.add_argument('--data_dir', default=DATA_DIR,
                        help='folder with Fashion-MNIST\'s training IDX files (.gz)')
    parser.add_argument('--out', default=os.path.join(REPO_ROOT, 'tools', 'bench', 'results',
                                                      'gpu_train_bench.json'))
    # One run, in this process: what the driver starts for each row.
    parser.add_argument('--worker', choices=['doppio', 'torch'], help=argparse.SUPPRESS)
    parser.add_argument('--gpus', type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument('--nccl', type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.batch < 1 or args.max_gpus < 0:
        parser.error('--steps and --batch must be positive, --warmup and --max_gpus >= 0')
    return args


def load_images(data_dir, count):
    """The first `count` training images, standardized as the peer does
    ([N, 1, 28, 28] float32), and their labels."""
    with gzip.open(os.path.join(data_dir, 'train-images-idx3-ubyte.gz')) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:count]
    with gzip.open(os.path.join(data_dir, 'train-labels-idx1-ubyte.gz')) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:count]
    x = (x.astype(np.float32) / 255.0 - PIXEL_MEAN) / PIXEL_STD
    return x, y


def batches(args):
    """The same sequence of global batches for every run (a fixed
    permutation of the first images, cycled)."""
    images, labels = load_images(args.data_dir, min(60000, args.batch * 200))
    order = np.random.RandomState(0).permutation(len(images))
    count = len(images) // args.batch
    for step in range(args.warmup + args.steps):
        rows = order[(step % count) * args.batch:(step % count + 1) * args.batch]
        yield images[rows], labels[rows]


def doppio_worker(args):
    sys.path.insert(0, REPO_ROOT)
    from doppio import core, data_parallel_model, model_helper, optimizer, workspace
    from doppio.proto import doppio_pb2
    from python_api.examples import fmnist_train

    devices = list(range(args.gpus))
    if args.batch % len(devices):
        raise SystemExit('gpu_train_bench: --batch {} is not a multiple of {} GPUs'.format(
            args.batch, len(devices)))

    def add_forward(model, loss_scale):
        softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
        loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]

    model = model_helper.ModelHelper(name='gpu_bench')
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=add_forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(
            m, base_learning_rate=LR, momentum=MOMENTUM, nesterov=False, policy='fixed'),
        devices=devices, use_nccl=bool(args.nccl))
    per_device = args.batch // len(devices)
    options = [core.DeviceOption(doppio_pb2.CUDA, d) for d in devices]
    losses = []
    start = None
    for step, (x, y) in enumerate(batches(args)):
        if step == args.warmup:
            start = time.perf_counter()
        for d, option in zip(devices, options):
            rows = slice(d * per_device, (d + 1) * per_device)
            workspace.FeedBlob('gpu_{}/data'.format(d), x[rows], device_option=option)
            workspace.FeedBlob('gpu_{}/label'.format(d), y[rows].astype(np.int32),
                               device_option=option)
        if step == 0:
            data_parallel_model.RunInitNet(model)
        data_parallel_model.RunNet(model, 1)
        if step >= args.warmup + args.steps - 10:
            losses.append(float(workspace.FetchBlob('gpu_0/loss')))
    seconds = time.perf_counter() - start
    return dict(img_per_s=round(args.steps * args.batch / seconds), seconds=round(seconds, 3),
                final_loss=round(float(np.mean(losses)), 4))


def torch_worker(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, PEER_DIR)
    from torch_fmnist import CNN  # the peer's model, as fmnist_bench uses it
    torch.manual_seed(0)
    net = CNN().cuda(0)
    if args.gpus > 1:
        net = torch.nn.DataParallel(net, device_ids=list(range(args.gpus)))
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    net.train()
    losses = []
    start = None
    for step, (x, y) in enumerate(batches(args)):
        if step == args.warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        xb = torch.from_numpy(x).cuda(0)
        yb = torch.from_numpy(y.astype(np.int64)).cuda(0)
        opt.zero_grad()
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        if step >= args.warmup + args.steps - 10:
            losses.append(float(loss))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return dict(img_per_s=round(args.steps * args.batch / seconds), seconds=round(seconds, 3),
                final_loss=round(float(np.mean(losses)), 4), peer='pytorch-' + torch.__version__)


def run_worker(python, args, worker, gpus, nccl=True):
    """One row, in a fresh process; its JSON result, or an exit naming it."""
    what = '{} on {} GPU(s){}'.format(worker, gpus, '' if nccl or worker == 'torch'
                                      else ' (no NCCL)')
    print('running {}'.format(what), file=sys.stderr, flush=True)
    command = [python, os.path.abspath(__file__), '--worker', worker, '--gpus', str(gpus),
               '--nccl', str(int(nccl)), '--steps', str(args.steps), '--warmup',
               str(args.warmup), '--batch', str(args.batch), '--data_dir', args.data_dir]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    if result.returncode != 0:
        raise SystemExit('gpu_train_bench: {} failed (exit {}):\n{}'.format(
            what, result.returncode, result.stderr[-3000:]))
    row = json.loads(result.stdout.strip().splitlines()[-1])
    row.update(framework=worker, gpus=gpus, nccl=bool(nccl) if worker == 'doppio' else None)
    return row


def torch_cuda_devices(python):
    """GPUs the peer's PyTorch sees, and why none when it sees none."""
    code = 'import torch; print(torch.__version__, torch.cuda.is_available() and ' \
           'torch.cuda.device_count())'
    try:
        result = subprocess.run([python, '-c', code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        return 0, 'cannot run {}: {}'.format(python, error)
    if result.returncode != 0:
        return 0, '{} cannot import torch'.format(python)
    version, count = result.stdout.split()
    count = int(count) if count.isdigit() else 0
    return count, '' if count else 'PyTorch {} ({}) has no CUDA device'.format(version, python)


def skip(why):
    print('gpu_train_bench: SKIP: {}'.format(why))
    return None


def table(rows):
    torch_by_gpus = {r['gpus']: r['img_per_s'] for r in rows if r['framework'] == 'torch'}
    lines = ['| run | GPUs | images/s | final loss | ours / PyTorch same GPUs |',
             '|---|---:|---:|---:|---:|']
    for row in rows:
        name = row['framework'] + ('' if row['nccl'] in (None, True) else ' (no NCCL)')
        reference = torch_by_gpus.get(row['gpus'])
        ratio = ('{:.2f}'.format(row['img_per_s'] / reference)
                 if row['framework'] == 'doppio' and reference else '-')
        lines.append('| {} | {} | {} | {} | {} |'.format(name, row['gpus'], row['img_per_s'],
                                                         row['final_loss'], ratio))
    return '\n'.join(lines)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        work = doppio_worker if args.worker == 'doppio' else torch_worker
        print(json.dumps(work(args)))
        return None
    from doppio import workspace
    ours = workspace.NumCudaDevices()
    if ours == 0:
        return skip('Doppio sees no usable GPU ({})'.format(workspace.C.cuda_unavailable_reason()))
    theirs, why = torch_cuda_devices(args.torch_python)
    if theirs == 0:
        return skip(why + '; pass --torch_python with a CUDA build of PyTorch')
    if not os.path.exists(os.path.join(PEER_DIR, 'torch_fmnist.py')):
        raise SystemExit('gpu_train_bench: the PyTorch peer {} is missing'.format(
            os.path.join(PEER_DIR, 'torch_fmnist.py')))
    max_gpus = min(ours, theirs) if args.max_gpus == 0 else args.max_gpus
    if max_gpus > min(ours, theirs):
        raise SystemExit('gpu_train_bench: --max_gpus {} but Doppio sees {} GPU(s) and '
                         'PyTorch {}'.format(args.max_gpus, ours, theirs))
    start = time.perf_counter()
    rows = []
    for gpus in range(1, max_gpus + 1):
        rows.append(run_worker(sys.executable, args, 'doppio', gpus))
        if args.no_nccl and gpus > 1:
            rows.append(run_worker(sys.executable, args, 'doppio', gpus, nccl=False))
        rows.append(run_worker(args.torch_python, args, 'torch', gpus))
    names = subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'],
                           stdout=subprocess.PIPE, universal_newlines=True).stdout.split('\n')
    ratios = {}
    for row in rows:
        peer = next((r for r in rows if r['framework'] == 'torch' and r['gpus'] == row['gpus']),
                    None)
        if row['framework'] == 'doppio' and row['nccl'] and peer:
            ratios[str(row['gpus'])] = round(row['img_per_s'] / peer['img_per_s'], 3)
    result = dict(date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
                  gpus=[n for n in names if n], batch=args.batch, steps=args.steps,
                  warmup=args.warmup, rows=rows, ratio_doppio_over_pytorch_by_gpus=ratios,
                  seconds=round(time.perf_counter() - start, 1))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)
    print('gpu_train_bench {}: {}, global batch {}, {} timed steps'.format(
        result['date'], ', '.join(result['gpus']), args.batch, args.steps))
    print()
    print(table(rows))
    print()
    print('results: {}'.format(args.out))
    return result


if __name__ == '__main__':
    main()
