#!/usr/bin/python3
"""Training throughput beside PyTorch (issue 24): the same model, the same
fed batch of random images and labels, momentum SGD (lr 0.05, momentum 0.9,
weight decay 1e-4), float32, one process; images/s of whole training steps
(forward, backward, update), alternating rounds, each side's best round.

Models:
  resnet20   the CIFAR ResNet-20 (He et al. 4.2): 3x3 conv 16, three stages of
             three basic blocks (16/32/64 channels, no-bias convs, SpatialBN,
             1x1 strided projection shortcuts, Sum; the block BNs use ResNetBuilder's
             epsilon 1e-3), global average pool, FC
             10; 32x32 images, batch 64. Doppio's is built with brew and
             doppio.models.resnet.ResNetBuilder, as a Caffe2 program would.
  resnet18   ResNet-18 (7x7/2 stem, 3x3/2 max pool, 2 basic blocks each of
             64/128/256/512 channels) on 64x64 images, batch 64, same blocks.
  mobilenet_v2  MobileNetV2 1.0 (inverted residuals: 1x1 expand, 3x3
             depthwise, ReLU6 as Clip(0, 6), 1x1 project; 1280-wide head) on
             64x64 images, batch 64.
  densenet   DenseNet-BC, growth 12: 3 dense blocks of 6 bottleneck layers
             (BN-ReLU-Conv1x1 to 48, BN-ReLU-Conv3x3 to 12, Concat) with
             halving transitions; 32x32 images, batch 64.

Doppio runs one device with its default threads (every op on all cores);
PyTorch eager with torch.set_num_threads(cores). Each side runs in both of
its layouts, Doppio's models built in NCHW and in NHWC (Caffe2's `order`,
through the ModelHelper's arg_scope) and PyTorch's in contiguous and
channels_last memory; each side's best layout counts. The first
convolution computes no input gradient on either side (PyTorch's input
needs none; Caffe2's `no_gradient_to_input`). The table also gives each
side's convolution + FC FLOP rate as a share of the machine's measured
sgemm rate (1024^3, the better of Doppio's MatMul and FC). Before timing, one step of
each from the same weights must give the same loss (within 1e-4), so both
sides train the same function.

Run through tools/bench/train_bench.sh (it installs the packages).
"""
import argparse
import datetime
import json
import math
import os
import sys
import time

import numpy as np

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
LR, MOMENTUM, WEIGHT_DECAY = 0.05, 0.9, 1e-4


# ---- ResNet-20, both sides ----

def doppio_resnet20(model, data, brew, resnet_builder):
    """Each doppio_* builder takes (model, data, brew, ResNetBuilder) and
    returns the logits; its parameters come in the order of its torch_*
    twin's, which copy_weights relies on."""
    brew.conv(model, data, 'conv1', 3, 16, kernel=3, pad=1, no_bias=1, no_gradient_to_input=1)
    brew.spatial_bn(model, 'conv1', 'conv1_bn', 16, epsilon=1e-5, momentum=0.9)
    brew.relu(model, 'conv1_bn', 'conv1_bn')
    builder = resnet_builder(model, 'conv1_bn', no_bias=1, is_test=False)
    channels = 16
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(3):
            builder.add_simple_block(channels, filters, down_sampling=(stage > 0 and block == 0))
            channels = filters
    brew.average_pool(model, builder.prev_blob, 'pool', global_pooling=1)
    return brew.fc(model, 'pool', 'logits', 64, 10)


def torch_resnet20(nn):
    stem = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    return _torch_resnet(nn, stem, 16, (16, 32, 64), 3)


def _torch_resnet(nn, stem, channels, widths, blocks):
    """Basic blocks as ResNetBuilder.add_simple_block builds them."""
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.1)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.1)
            self.shortcut = None
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout, eps=1e-3, momentum=0.1))

        def forward(self, x):
            h = self.bn2(self.conv2(nn.functional.relu(self.bn1(self.conv1(x)))))
            return nn.functional.relu(h + (x if self.shortcut is None else self.shortcut(x)))

    layers = list(stem)
    for stage, filters in enumerate(widths):
        for block in range(blocks):
            layers.append(Block(channels, filters, 2 if stage > 0 and block == 0 else 1))
            channels = filters
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10)]
    return nn.Sequential(*layers)


def doppio_resnet18(model, data, brew, resnet_builder):
    brew.conv(model, data, 'conv1', 3, 64, kernel=7, stride=2, pad=3, no_bias=1,
              no_gradient_to_input=1)
    brew.spatial_bn(model, 'conv1', 'conv1_bn', 64, epsilon=1e-5, momentum=0.9)
    brew.relu(model, 'conv1_bn', 'conv1_bn')
    brew.max_pool(model, 'conv1_bn', 'pool1', kernel=3, stride=2, pad=1)
    builder = resnet_builder(model, 'pool1', no_bias=1, is_test=False)
    channels = 64
    for stage, filters in enumerate((64, 128, 256, 512)):
        for block in range(2):
            builder.add_simple_block(channels, filters, down_sampling=(stage > 0 and block == 0))
            channels = filters
    brew.average_pool(model, builder.prev_blob, 'pool', global_pooling=1)
    return brew.fc(model, 'pool', 'logits', 512, 10)


def torch_resnet18(nn):
    stem = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1)]
    return _torch_resnet(nn, stem, 64, (64, 128, 256, 512), 2)


# MobileNetV2 (Sandler et al. table 2): expansion t, channels c, repeats n,
# first stride s.
MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]


def _doppio_conv_bn(model, brew, blob, name, cin, cout, kernel, stride=1, group=1, relu6=True,
                    **conv_args):
    brew.conv(model, blob, name, cin, cout, kernel=kernel, stride=stride, pad=kernel // 2,
              group=group, no_bias=1, **conv_args)
    brew.spatial_bn(model, name, name + '_bn', cout, epsilon=1e-5, momentum=0.9)
    if relu6:
        return model.net.Clip(name + '_bn', name + '_relu6', min=0.0, max=6.0)
    return name + '_bn'


def doppio_mobilenet_v2(model, data, brew, resnet_builder):
    blob = _doppio_conv_bn(model, brew, data, 'stem', 3, 32, 3, stride=2,
                           no_gradient_to_input=1)
    channels, index = 32, 0
    for expansion, filters, repeats, first_stride in MOBILENET_V2:
        for repeat in range(repeats):
            stride = first_stride if repeat == 0 else 1
            name, hidden, block_in = 'block%d' % index, channels * expansion, blob
            if expansion != 1:
                blob = _doppio_conv_bn(model, brew, blob, name + '_expand', channels, hidden, 1)
            blob = _doppio_conv_bn(model, brew, blob, name + '_dw', hidden, hidden, 3, stride,
                                   group=hidden)
            blob = _doppio_conv_bn(model, brew, blob, name + '_project', hidden, filters, 1,
                                   relu6=False)
            if stride == 1 and channels == filters:
                blob = brew.sum(model, [block_in, blob], name + '_sum')
            channels, index = filters, index + 1
    blob = _doppio_conv_bn(model, brew, blob, 'head', channels, 1280, 1)
    brew.average_pool(model, blob, 'pool', global_pooling=1)
    return brew.fc(model, 'pool', 'logits', 1280, 10)


def torch_mobilenet_v2(nn):
    def conv_bn(cin, cout, kernel, stride=1, group=1, relu6=True):
        layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=group, bias=False),
                  nn.BatchNorm2d(cout)]
        return layers + ([nn.ReLU6()] if relu6 else [])

    class Inverted(nn.Module):
        def __init__(self, cin, cout, expansion, stride):
            super().__init__()
            hidden = cin * expansion
            layers = conv_bn(cin, hidden, 1) if expansion != 1 else []
            layers += conv_bn(hidden, hidden, 3, stride, hidden)
            layers += conv_bn(hidden, cout, 1, relu6=False)
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.body(x) if self.residual else self.body(x)

    layers, channels = conv_bn(3, 32, 3, 2), 32
    for expansion, filters, repeats, first_stride in MOBILENET_V2:
        for repeat in range(repeats):
            layers.append(Inverted(channels, filters, expansion,
                                   first_stride if repeat == 0 else 1))
            channels = filters
    layers += conv_bn(channels, 1280, 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 10)]
    return nn.Sequential(*layers)


# DenseNet-BC (Huang et al.) for 32x32: growth 12, 3 dense blocks of 6
# bottleneck layers (BN-ReLU-Conv1x1 to 4k, BN-ReLU-Conv3x3 to k, concat),
# transitions BN-ReLU-Conv1x1 (compression 0.5) + 2x2 average pooling.
DENSENET_GROWTH, DENSENET_LAYERS, DENSENET_BLOCKS = 12, 6, 3


def doppio_densenet(model, data, brew, resnet_builder):
    k = DENSENET_GROWTH
    blob = brew.conv(model, data, 'stem', 3, 2 * k, kernel=3, pad=1, no_bias=1,
                     no_gradient_to_input=1)
    channels = 2 * k

    def bn_relu_conv(blob, name, cin, cout, kernel):
        brew.spatial_bn(model, blob, name + '_bn', cin, epsilon=1e-5, momentum=0.9)
        brew.relu(model, name + '_bn', name + '_relu')
        return brew.conv(model, name + '_relu', name, cin, cout, kernel=kernel, pad=kernel // 2,
                         no_bias=1)

    for block in range(DENSENET_BLOCKS):
        for layer in range(DENSENET_LAYERS):
            name = 'dense%d_%d' % (block, layer)
            h = bn_relu_conv(blob, name + '_a', channels, 4 * k, 1)
            h = bn_relu_conv(h, name + '_b', 4 * k, k, 3)
            # The channel axis: the model's order (its arg_scope) decides.
            blob = brew.concat(model, [blob, h], name + '_cat')
            channels += k
        if block < DENSENET_BLOCKS - 1:
            blob = bn_relu_conv(blob, 'transition%d' % block, channels, channels // 2, 1)
            channels //= 2
            blob = brew.average_pool(model, blob, 'transition%d_pool' % block, kernel=2,
                                     stride=2)
    brew.spatial_bn(model, blob, 'final_bn', channels, epsilon=1e-5, momentum=0.9)
    brew.relu(model, 'final_bn', 'final_relu')
    brew.average_pool(model, 'final_relu', 'pool', global_pooling=1)
    return brew.fc(model, 'pool', 'logits', channels, 10)


def torch_densenet(nn):
    import torch
    k = DENSENET_GROWTH

    def bn_relu_conv(cin, cout, kernel):
        return [nn.BatchNorm2d(cin), nn.ReLU(),
                nn.Conv2d(cin, cout, kernel, 1, kernel // 2, bias=False)]

    class Dense(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.body = nn.Sequential(*(bn_relu_conv(cin, 4 * k, 1) + bn_relu_conv(4 * k, k, 3)))

        def forward(self, x):
            return torch.cat([x, self.body(x)], 1)

    layers, channels = [nn.Conv2d(3, 2 * k, 3, 1, 1, bias=False)], 2 * k
    for block in range(DENSENET_BLOCKS):
        for _ in range(DENSENET_LAYERS):
            layers.append(Dense(channels))
            channels += k
        if block < DENSENET_BLOCKS - 1:
            layers += bn_relu_conv(channels, channels // 2, 1) + [nn.AvgPool2d(2, 2)]
            channels //= 2
    layers += [nn.BatchNorm2d(channels), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
               nn.Linear(channels, 10)]
    return nn.Sequential(*layers)


MODELS = {
    'resnet20': dict(image=32, batch=64, doppio=doppio_resnet20, torch=torch_resnet20),
    'resnet18': dict(image=64, batch=64, doppio=doppio_resnet18, torch=torch_resnet18),
    'mobilenet_v2': dict(image=64, batch=64, doppio=doppio_mobilenet_v2,
                         torch=torch_mobilenet_v2),
    'densenet': dict(image=32, batch=64, doppio=doppio_densenet, torch=torch_densenet),
}


# ---- Doppio ----

class DoppioTrainer:
    """One model in one storage order, in a workspace of its own."""
    def __init__(self, name, spec, x, labels, order='NCHW'):
        from doppio import brew, model_helper, optimizer, workspace
        from doppio.models.resnet import ResNetBuilder
        self.workspace = workspace
        self.order = order
        self.workspace_name = 'train_bench_%s_%s' % (name, order)
        workspace.SwitchWorkspace(self.workspace_name, True)
        workspace.ResetWorkspace()
        if order == 'NHWC':
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        model = model_helper.ModelHelper(name='train_' + name, arg_scope={'order': order})
        logits = spec['doppio'](model, 'data', brew, ResNetBuilder)
        _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'loss'])
        model.AddGradientOperators([loss])
        optimizer.build_sgd(model, base_learning_rate=LR, momentum=MOMENTUM,
                            weight_decay=WEIGHT_DECAY, policy='fixed')
        workspace.FeedBlob('data', x)
        workspace.FeedBlob('label', labels)
        workspace.RunNetOnce(model.param_init_net)
        workspace.CreateNet(model.net)
        self.model = model
        self.net_name = model.net.Proto().name

    def parameters(self, nchw=False):
        """(name, array) of the trainable parameters in creation order, as
        the model holds them or (nchw) NHWC filters [M, kh, kw, C] turned
        into PyTorch's [M, C, kh, kw]."""
        self.workspace.SwitchWorkspace(self.workspace_name)
        trainable = {str(q) for q in self.model.GetParams()}
        turn = nchw and self.order == 'NHWC'
        return [(str(p), self._turned(self.workspace.FetchBlob(str(p)), turn, (0, 3, 1, 2)))
                for p in self.model.params if str(p) in trainable]

    def set(self, name, value, nchw=False):
        """Feeds a parameter as the model holds it or (nchw) as PyTorch
        lays it out."""
        self.workspace.SwitchWorkspace(self.workspace_name)
        turn = nchw and self.order == 'NHWC'
        self.workspace.FeedBlob(name, self._turned(value, turn, (0, 2, 3, 1)))

    @staticmethod
    def _turned(value, turn, axes):
        return np.ascontiguousarray(value.transpose(axes)) if turn and value.ndim == 4 else value

    def step(self, iterations=1):
        self.workspace.SwitchWorkspace(self.workspace_name)
        self.workspace.RunNet(self.net_name, iterations)

    def loss(self):
        self.workspace.SwitchWorkspace(self.workspace_name)
        return float(self.workspace.FetchBlob('loss'))

    def step_flops(self):
        """Multiply-add FLOPs (x2) of one training step's convolutions and FC
        layers: each forward product once for the forward, once for the
        input gradient (not for the first layer, whose input needs none) and
        once for the weight gradient."""
        self.workspace.SwitchWorkspace(self.workspace_name)
        total = 0
        for op in self.model.net.Proto().op:
            if op.type not in ('Conv', 'FC'):
                continue
            x = self.workspace.FetchBlob(op.input[0])
            w = self.workspace.FetchBlob(op.input[1])
            y = self.workspace.FetchBlob(op.output[0])
            # Both orders: w.shape[1:] holds the kernel and C / group.
            forward = 2 * y.size * (int(np.prod(w.shape[1:])) if op.type == 'Conv'
                                    else x.size // x.shape[0])
            backward = 1 if op.input[0] == 'data' else 2
            total += forward * (1 + backward)
        return total


def measured_sgemm_gflops(size=1024, repeats=10):
    """The machine's float32 GEMM rate, best of `repeats` through each of
    Doppio's two GEMM paths: MatMul (OpenBLAS) and FC (oneDNN's matmul, the
    faster one with AVX-512); the better rate is what 'percent of sgemm'
    compares with."""
    from doppio import core, workspace
    rng = np.random.RandomState(0)
    workspace.FeedBlob('sgemm_a', rng.randn(size, size).astype(np.float32))
    workspace.FeedBlob('sgemm_b', rng.randn(size, size).astype(np.float32))
    workspace.FeedBlob('sgemm_bias', np.zeros(size, np.float32))
    net = core.Net('sgemm_rate')
    net.MatMul(['sgemm_a', 'sgemm_b'], 'sgemm_c')
    fc = core.Net('sgemm_rate_fc')
    fc.FC(['sgemm_a', 'sgemm_b', 'sgemm_bias'], 'sgemm_d')
    best = math.inf
    for gemm in (net, fc):
        workspace.CreateNet(gemm)
        workspace.RunNet(gemm.Proto().name)
        for _ in range(repeats):
            start = time.perf_counter()
            workspace.RunNet(gemm.Proto().name)
            best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


# ---- PyTorch ----

class TorchTrainer:
    def __init__(self, spec, x, labels, channels_last=False):
        import torch
        self.torch = torch
        self.layout = 'channels_last' if channels_last else 'contiguous'
        self.model = spec['torch'](torch.nn).train()
        self.x = torch.from_numpy(x)
        if channels_last:
            self.model = self.model.to(memory_format=torch.channels_last)
            self.x = self.x.contiguous(memory_format=torch.channels_last)
        self.labels = torch.from_numpy(labels.astype(np.int64))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM,
                                         weight_decay=WEIGHT_DECAY)
        self.last_loss = None

    def step(self, iterations=1):
        for _ in range(iterations):
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.labels)
            loss.backward()
            self.optimizer.step()
        self.last_loss = float(loss)


def copy_weights(doppio, torch_trainers, other_doppios=()):
    """Gives the torch models (and the other Doppio layouts) the first
    Doppio model's initial weights, matched by order and shape (conv
    filters, BN scale/bias, FC weight/bias)."""
    import torch
    ours = doppio.parameters(nchw=True)
    for trainer in torch_trainers:
        theirs = [p for p in trainer.model.parameters()]
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        with torch.no_grad():
            for (name, value), param in zip(ours, theirs):
                assert tuple(value.shape) == tuple(param.shape), (name, value.shape, param.shape)
                param.copy_(torch.from_numpy(value))
    for other in other_doppios:
        for name, value in ours:
            other.set(name, value, nchw=True)


def time_steps(trainer, iterations):
    start = time.perf_counter()
    trainer.step(iterations)
    return time.perf_counter() - start


def bench_model(args, name):
    """Every layout of each side from the same weights, rounds alternating
    between all of them; each side's best layout and round count."""
    spec = MODELS[name]
    rng = np.random.RandomState(24)
    x = rng.randn(spec['batch'], 3, spec['image'], spec['image']).astype(np.float32)
    labels = rng.randint(0, 10, size=spec['batch']).astype(np.int32)
    ours = [DoppioTrainer(name, spec, x, labels, order) for order in args.doppio_orders]
    theirs = [TorchTrainer(spec, x, labels, layout == 'channels_last')
              for layout in args.torch_layouts]
    copy_weights(ours[0], theirs, ours[1:])
    for trainer in ours + theirs:
        trainer.step()
    first = {t.order: t.loss() for t in ours}
    first_torch = {t.layout: t.last_loss for t in theirs}
    reference = theirs[0].last_loss
    agrees = all(abs(v - reference) <= 1e-4 for v in list(first.values()) +
                 list(first_torch.values()))
    row = dict(model=name, batch=spec['batch'], image=spec['image'],
               doppio_first_loss=first[ours[0].order], torch_first_loss=reference, agrees=agrees,
               doppio_first_loss_by_layout=first, torch_first_loss_by_layout=first_torch)
    for _ in range(args.warmup):
        for trainer in ours + theirs:
            trainer.step()
    seconds = {id(t): math.inf for t in ours + theirs}
    for _ in range(args.rounds):
        for trainer in ours + theirs:
            seconds[id(trainer)] = min(seconds[id(trainer)],
                                       time_steps(trainer, args.iterations) / args.iterations)
    best_ours = min(ours, key=lambda t: seconds[id(t)])
    best_theirs = min(theirs, key=lambda t: seconds[id(t)])
    best = {'doppio': seconds[id(best_ours)], 'torch': seconds[id(best_theirs)]}
    gflops = ours[0].step_flops() / 1e9
    row.update(step_gflops=gflops, doppio_gflops_per_s=gflops / best['doppio'],
               torch_gflops_per_s=gflops / best['torch'])
    row.update(doppio_layout=best_ours.order, torch_layout=best_theirs.layout,
               doppio_images_per_s_by_layout={t.order: spec['batch'] / seconds[id(t)]
                                              for t in ours},
               torch_images_per_s_by_layout={t.layout: spec['batch'] / seconds[id(t)]
                                             for t in theirs})
    row.update(doppio_images_per_s=spec['batch'] / best['doppio'],
               torch_images_per_s=spec['batch'] / best['torch'],
               ratio=best['torch'] / best['doppio'], doppio_last_loss=best_ours.loss(),
               torch_last_loss=best_theirs.last_loss)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--models', default=','.join(MODELS))
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--iterations', type=int, default=20, help='steps per timed round')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--doppio_orders', default='NCHW,NHWC',
                        type=lambda v: v.split(','), help="Doppio's layouts to run")
    parser.add_argument('--torch_layouts', default='contiguous,channels_last',
                        type=lambda v: v.split(','), help="PyTorch's layouts to run")
    parser.add_argument('--out', default=os.path.join(HERE, 'results', 'train_bench.json'))
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(os.cpu_count())
    load_before = os.getloadavg()
    sgemm = measured_sgemm_gflops()
    rows = []
    for name in args.models.split(','):
        print('training %s' % name, file=sys.stderr, flush=True)
        rows.append(bench_model(args, name))
    result = dict(date=datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
                  machine=machine.machine(), torch_version=torch.__version__,
                  rounds=args.rounds, iterations=args.iterations, sgemm_gflops=sgemm,
                  load_average_before=load_before, load_average_after=os.getloadavg(),
                  rows=rows)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)
    print('train_bench %s: %s, torch %s, best of %d rounds of %d steps'
          % (result['date'], machine.describe(), torch.__version__, args.rounds,
             args.iterations))
    print('measured sgemm (1024^3, best of MatMul and FC): %.1f GFLOP/s' % sgemm)
    print()
    print('| model | batch | Doppio img/s (layout) | PyTorch img/s (layout) | Doppio / PyTorch '
          '| Doppio % of sgemm | PyTorch % of sgemm | first-step loss agrees |')
    print('|---|---:|---:|---:|---:|---:|---:|---|')
    for r in rows:
        print('| %s (%dx%d) | %d | %.0f (%s) | %.0f (%s) | %.2fx | %.0f%% | %.0f%% | %s |' % (
            r['model'], r['image'], r['image'], r['batch'], r['doppio_images_per_s'],
            r['doppio_layout'], r['torch_images_per_s'], r['torch_layout'], r['ratio'],
            100 * r['doppio_gflops_per_s'] / sgemm,
            100 * r['torch_gflops_per_s'] / sgemm,
            'yes' if r['agrees'] else 'NO (%.5f vs %.5f)' % (r['doppio_first_loss'],
                                                          r['torch_first_loss'])))
    return 0 if all(r['agrees'] for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
