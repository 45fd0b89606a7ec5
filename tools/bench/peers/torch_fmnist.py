#!/usr/bin/python3
"""PyTorch peer of the Fashion-MNIST training benchmarks: the reference CNN
and MLP of docs/DESIGN.md ("Reference workloads") trained eagerly on the CPU
with the same optimizer, batch and input scaling as Doppio's example.

    torch_fmnist.py [cnn|mlp|resnet] [EPOCHS] [THREADS] [--train_limit N]
                    [--precision fp32|bf16]

Prints one line per epoch (training seconds, images/s, test accuracy) and,
last, one JSON line with every epoch; the benches read that line. Images/s
counts the training loop only: the data is decoded into tensors before the
clock starts, as Doppio's input op fills its buffer when the net is created.
The data comes from Debian's dataset-fashion-mnist package. --precision
bf16 trains under torch.autocast('cpu', torch.bfloat16), PyTorch's CPU mixed
precision (this PyTorch has no float16 autocast on the CPU).
"""
import argparse
import gzip
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DATA_DIR = "/usr/share/datasets/fashion-mnist"
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530
BATCH = 64
LR, MOMENTUM = 0.05, 0.9


def load(split):
    """(images [N, 1, 28, 28] float32 normalized, labels [N] int64) of the
    'train' or 't10k' split, straight from the IDX files."""
    with gzip.open("{}/{}-images-idx3-ubyte.gz".format(DATA_DIR, split)) as f:
        raw = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
    images = raw.reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    images = (images - PIXEL_MEAN) / PIXEL_STD
    with gzip.open("{}/{}-labels-idx1-ubyte.gz".format(DATA_DIR, split)) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    return images, labels


class CNN(nn.Module):
    """Two Conv3x3(pad 1)+BN+Relu+MaxPool2 stages (32, 64 channels), then
    FC 3136->128 + Relu and FC 128->10. Attribute names c1/b1/c2/b2/f1/f2 are
    what the inference and GPU benches load weights into."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.c2, self.b2 = nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.f1, self.f2 = nn.Linear(64 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        for conv, bn in ((self.c1, self.b1), (self.c2, self.b2)):
            x = F.max_pool2d(F.relu(bn(conv(x))), 2)
        return self.f2(F.relu(self.f1(torch.flatten(x, 1))))


class MLP(nn.Module):
    """FC 784-256-128-10 with Relu between."""

    def __init__(self):
        super().__init__()
        self.f1, self.f2, self.f3 = nn.Linear(784, 256), nn.Linear(256, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.f1(torch.flatten(x, 1)))
        return self.f3(F.relu(self.f2(x)))


class BasicBlock(nn.Module):
    """Two 3x3 Conv+BN (the first strided when downsampling) plus the input,
    projected by a 1x1 Conv+BN when the width changes; then Relu."""

    def __init__(self, width_in, width, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(width_in, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.c2, self.b2 = nn.Conv2d(width, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width)
        self.shortcut = None
        if width != width_in:
            self.shortcut = nn.Sequential(nn.Conv2d(width_in, width, 1, stride, bias=False),
                                          nn.BatchNorm2d(width))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nn.Module):
    """The CIFAR ResNet of fmnist_models.add_cifar_resnet: Conv3x3(pad 1) 16 +
    BN + Relu, stages of 16, 32, 64 filters with two blocks each, global
    average pooling, FC 64->10."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16)
        blocks, width_in = [], 16
        for stage, width in enumerate((16, 32, 64)):
            for index in range(2):
                blocks.append(BasicBlock(width_in, width, 2 if stage and not index else 1))
                width_in = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.b1(self.c1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


MODELS = {"cnn": CNN, "mlp": MLP, "resnet": ResNet}


def autocast(precision):
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def train_epoch(model, optimizer, images, labels, order, precision="fp32"):
    model.train()
    start = time.perf_counter()
    for first in range(0, len(order) - BATCH + 1, BATCH):
        picked = order[first:first + BATCH]
        optimizer.zero_grad()
        with autocast(precision):
            loss = F.cross_entropy(model(images[picked]), labels[picked])
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def accuracy(model, images, labels):
    model.eval()
    with torch.no_grad():
        return float((model(images).argmax(dim=1) == labels).float().mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default="cnn", choices=sorted(MODELS))
    parser.add_argument("epochs", nargs="?", type=int, default=1)
    parser.add_argument("threads", nargs="?", type=int, default=2)
    parser.add_argument("--train_limit", type=int, default=-1,
                        help="train on the first N images only (-1: all 60,000)")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shuffle = np.random.RandomState(0)
    train_x, train_y = load("train")
    if args.train_limit > 0:
        train_x, train_y = train_x[:args.train_limit], train_y[:args.train_limit]
    test_x, test_y = load("t10k")
    train_x, train_y, test_x, test_y = (torch.from_numpy(a) for a in
                                        (train_x, train_y, test_x, test_y))
    model = MODELS[args.model]()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)

    epochs = []
    for epoch in range(1, args.epochs + 1):
        order = torch.from_numpy(shuffle.permutation(len(train_x)))
        seconds = train_epoch(model, optimizer, train_x, train_y, order, args.precision)
        epochs.append(dict(epoch=epoch, seconds=round(seconds, 2),
                           img_per_s=round(len(train_x) / seconds),
                           test_acc=round(accuracy(model, test_x, test_y), 4)))
        print(epochs[-1], flush=True)
    print(json.dumps(dict(peer="pytorch-" + torch.__version__, model=args.model,
                          precision=args.precision,
                          threads=args.threads, batch=BATCH, epochs=epochs)))


if __name__ == "__main__":
    main()
