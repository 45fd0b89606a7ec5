#!/usr/bin/python3
"""Mixed precision on the CPU (issue 27) beside PyTorch's CPU autocast, in
one run: the reference CNN and the CIFAR ResNet-14 of fmnist_models.py
trained on Fashion-MNIST by fmnist_train.py --precision fp32 / bf16 / fp16
(one process, one device, a seeded shuffle), and the same models by the
PyTorch peer (tools/bench/peers/torch_fmnist.py) in float32 and under
torch.autocast('cpu', torch.bfloat16); this PyTorch has no float16 CPU
autocast, so float16 is compared with its float32.

    tools/bench/mixed_precision_bench.sh [--models cnn,resnet] [--epochs 3]
        [--train_limit N] [--torch_train_limit 6400] [--out FILE]

Reports, per model and precision: Doppio's test accuracy and its
difference from Doppio's float32 in points (target: within 0.5), Doppio's
and PyTorch's training images/s and their ratio. PyTorch's runs only time
its training (on --torch_train_limit images, one epoch; its float32 ResNet
trains at under 100 images/s on 2 cores), so their accuracy is not
compared.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import machine  # noqa: E402

PRECISIONS = ('fp32', 'bf16', 'fp16')


def doppio_run(model, precision, args, workdir):
    command = [os.path.join(ROOT, 'tools', 'python'),
               os.path.join(ROOT, 'python_api', 'examples', 'fmnist_train.py'), '--model', model,
               '--precision', precision, '--epochs', str(args.epochs), '--devices', '1',
               '--no_progress', '--plot', 'none', '--workdir', workdir]
    if args.train_limit > 0:
        command += ['--train_limit', str(args.train_limit)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, DOPPIO_SKIP_BUILD='1'))
    with open(os.path.join(workdir, 'summary.json')) as f:
        summary = json.load(f)
    rates = [epoch['img_per_s'] for epoch in summary['epochs']]
    return dict(accuracy=summary['final_test_accuracy'], img_per_s=sum(rates) / len(rates),
                loss_scale=summary.get('loss_scale'))


def torch_run(model, precision, args):
    command = ['/usr/bin/python3', os.path.join(HERE, 'peers', 'torch_fmnist.py'), model, '1',
               '2', '--train_limit', str(args.torch_train_limit), '--precision', precision]
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE).stdout.decode()
    epochs = json.loads(out.strip().splitlines()[-1])['epochs']
    return dict(img_per_s=epochs[-1]['img_per_s'])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default='cnn,resnet')
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--train_limit', type=int, default=-1)
    parser.add_argument('--torch_train_limit', type=int, default=6400)
    parser.add_argument('--out', default='')
    args = parser.parse_args(argv)
    print('mixed_precision_bench: {}'.format(machine.describe()), flush=True)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models.split(','):
            torch_rates = {p: torch_run(model, p, args)['img_per_s'] for p in ('fp32', 'bf16')}
            reference = None
            for precision in PRECISIONS:
                ours = doppio_run(model, precision, args,
                                  os.path.join(scratch, model + '_' + precision))
                if reference is None:
                    reference = ours['accuracy']
                peer = torch_rates.get(precision, torch_rates['fp32'])
                row = dict(model=model, precision=precision, accuracy=ours['accuracy'],
                           delta_points=round(100 * (ours['accuracy'] - reference), 2),
                           img_per_s=round(ours['img_per_s']), torch_img_per_s=peer,
                           torch_precision=precision if precision in torch_rates else 'fp32',
                           ratio=round(ours['img_per_s'] / peer, 2),
                           loss_scale=ours['loss_scale'])
                results.append(row)
                print('{model:6s} {precision}: test accuracy {accuracy:.4f} ({delta_points:+.2f} '
                      'points vs float32), {img_per_s} images/s; PyTorch {torch_precision} '
                      '{torch_img_per_s} images/s; ours / PyTorch {ratio}x'.format(**row),
                      flush=True)
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(dict(machine=machine.describe(), epochs=args.epochs,
                           train_limit=args.train_limit, results=results), f, indent=1)


if __name__ == '__main__':
    main()
