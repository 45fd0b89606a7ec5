"""Pipeline-style model parallelism: the reference CNN (fmnist_train.py) with
its convolutional stage on one device and its classifier (and loss) on
another; core.InjectCrossDeviceCopies adds the Copy ops between them.

    tools/python python_api/examples/model_parallel_cnn.py --steps 20

Devices: CPU devices 0 and 1 (blob scopes cpu_0/, cpu_1/), or GPUs 0 and 1
(gpu_0/, gpu_1/) when at least two are visible. The data is random (the
point is the placement, not the accuracy)."""

import argparse

import numpy as np

from caffe2.proto import caffe2_pb2
from caffe2.python import core, model_helper, optimizer, workspace

import fmnist_train


def stage_devices(use_gpu=None):
    """[(DeviceOption, name scope)] for the two stages."""
    if use_gpu is None:
        use_gpu = workspace.NumCudaDevices() >= 2
    kind, prefix = (caffe2_pb2.CUDA, 'gpu') if use_gpu else (caffe2_pb2.CPU, 'cpu')
    return [(core.DeviceOption(kind, d), '{}_{}'.format(prefix, d)) for d in (0, 1)]


def build_model(stages, base_lr=0.05, momentum=0.9, name='model_parallel_cnn', net_type=None):
    """The trained model: stage 0 (conv tower) and stage 1 (classifier, loss)
    under their DeviceScope and NameScope (a stage's scope may be '' for no
    prefix), momentum SGD, then cross-device copies. Inputs: 'data' (float
    [N, 1, 28, 28], already standardized) and 'label' (int32 [N]). Returns
    (model, loss blob name, blob_to_device)."""
    model = model_helper.ModelHelper(name=name)
    (conv_device, conv_scope), (head_device, head_scope) = stages
    with core.DeviceScope(conv_device), core.NameScope(conv_scope):
        pool2 = fmnist_train.add_reference_conv_tower(model, core.BlobReference('data'), is_test=0)
    with core.DeviceScope(head_device), core.NameScope(head_scope):
        softmax = fmnist_train.add_reference_classifier(model, pool2)
        loss = fmnist_train.add_loss_and_accuracy(model, softmax, core.BlobReference('label'))
        model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=base_lr, momentum=momentum,
                        nesterov=False, policy='fixed')
    (init_net, train_net), blob_to_device = core.InjectDeviceCopiesAmongNets(
        [model.param_init_net, model.net])
    model.param_init_net, model.net = init_net, train_net
    if net_type is not None:
        model.net.Proto().type = net_type
    return model, str(loss), blob_to_device


def run_steps(model, loss, batches):
    """Runs the init net, then one training step per (data, label) batch;
    returns the losses."""
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('data', batches[0][0])
    workspace.FeedBlob('label', batches[0][1])
    workspace.CreateNet(model.net, overwrite=True)
    losses = []
    for data, label in batches:
        workspace.FeedBlob('data', data)
        workspace.FeedBlob('label', label)
        workspace.RunNet(model.net.Name())
        losses.append(float(workspace.FetchBlob(loss)))
    return losses


def random_batches(steps, batch_size, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.randn(batch_size, 1, 28, 28).astype(np.float32),
             rng.randint(0, 10, size=batch_size).astype(np.int32)) for _ in range(steps)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--batch_size', type=int, default=64)
    parser.add_argument('--net_type', default='dag', choices=['simple', 'dag'])
    parser.add_argument('--cpu', action='store_true', help='CPU devices even with GPUs')
    args = parser.parse_args(argv)
    stages = stage_devices(use_gpu=False if args.cpu else None)
    model, loss, blob_to_device = build_model(stages, net_type=args.net_type)
    copies = [op for op in model.net.Proto().op if op.type.startswith('Copy')]
    print('stages: {}; {} copy ops: {}'.format(
        [scope for _, scope in stages], len(copies),
        ', '.join('{}->{}'.format(op.input[0], op.output[0]) for op in copies)))
    for step, value in enumerate(run_steps(model, loss, random_batches(args.steps, args.batch_size))):
        print('step {} loss {:.4f}'.format(step, value))


if __name__ == '__main__':
    main()
