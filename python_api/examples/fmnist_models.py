"""The reference models of docs/DESIGN.md section 8 as brew builders, shared by
fmnist_train.py (which re-exports them), the model-parallel example, the
tests and the benchmarks.

Both take `data` (standardized float [N, 1, 28, 28]) and return the softmax
blob; layer and parameter names are the ones checkpoints and exported nets
carry, so they must not change.
"""
import numpy as np

from caffe2.python import brew, core
from caffe2.python.models import resnet

# Pixels are scaled to [0, 1] and then standardized with the training set's
# statistics (the same constants as the PyTorch peer, tools/bench/peers/torch_fmnist.py).
PIXEL_MEAN = 0.2860
PIXEL_STD = 0.3530


def add_preprocessing(model, data_uint8):
    """uint8 pixels [N, 1, 28, 28] -> standardized float. `pixel_shift`
    (-mean / std) is a blob made by the training model's init net (one per
    device), so the checkpoint and the exported predict net carry it as a
    parameter."""
    data = model.net.Cast(data_uint8, 'data_float', to=core.DataType.FLOAT)
    data = model.net.Scale(data, data, scale=1.0 / (255.0 * PIXEL_STD))
    data = model.net.Add([data, 'pixel_shift'], 'data', broadcast=1)
    return model.net.StopGradient(data, data)


def uniform_init(fan_in):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases: PyTorch's
    default for Conv2d and Linear, so both frameworks start from the same
    distribution (brew's default, XavierFill, is sqrt(3) times wider)."""
    bound = 1.0 / np.sqrt(fan_in)
    fill = ('UniformFill', {'min': -bound, 'max': bound})
    return dict(weight_init=fill, bias_init=fill)


def add_reference_cnn(model, data, is_test):
    pool2 = add_reference_conv_tower(model, data, is_test)
    return add_reference_classifier(model, pool2)


def add_reference_conv_tower(model, data, is_test):
    """The reference CNN's convolutional half (a pipeline stage of its own in
    model_parallel_cnn.py): data -> pool2 [N, 64, 7, 7]."""
    conv1 = brew.conv(model, data, 'conv1', dim_in=1, dim_out=32, kernel=3, pad=1,
                      **uniform_init(1 * 3 * 3))
    bn1 = brew.spatial_bn(model, conv1, 'bn1', 32, epsilon=1e-5, momentum=0.9,
                          is_test=is_test)
    relu1 = brew.relu(model, bn1, bn1)
    pool1 = brew.max_pool(model, relu1, 'pool1', kernel=2, stride=2)
    conv2 = brew.conv(model, pool1, 'conv2', dim_in=32, dim_out=64, kernel=3, pad=1,
                      **uniform_init(32 * 3 * 3))
    bn2 = brew.spatial_bn(model, conv2, 'bn2', 64, epsilon=1e-5, momentum=0.9,
                          is_test=is_test)
    relu2 = brew.relu(model, bn2, bn2)
    return brew.max_pool(model, relu2, 'pool2', kernel=2, stride=2)


def add_reference_classifier(model, pool2):
    """The reference CNN's fully connected half: pool2 -> softmax."""
    fc3 = brew.fc(model, pool2, 'fc3', dim_in=64 * 7 * 7, dim_out=128,
                  **uniform_init(64 * 7 * 7))
    relu3 = brew.relu(model, fc3, fc3)
    pred = brew.fc(model, relu3, 'pred', dim_in=128, dim_out=10, **uniform_init(128))
    return brew.softmax(model, pred, 'softmax')


def add_reference_mlp(model, data, is_test):
    """The reference MLP: FC 784-256-128-10 with Relu (the PyTorch peer's
    `mlp`). FC flattens [N, 1, 28, 28] after axis 1 itself; `is_test` is
    unused (no layer behaves differently in testing) but kept so both
    models are built alike."""
    del is_test
    fc1 = brew.fc(model, data, 'fc1', dim_in=28 * 28, dim_out=256, **uniform_init(28 * 28))
    relu1 = brew.relu(model, fc1, fc1)
    fc2 = brew.fc(model, relu1, 'fc2', dim_in=256, dim_out=128, **uniform_init(256))
    relu2 = brew.relu(model, fc2, fc2)
    pred = brew.fc(model, relu2, 'pred', dim_in=128, dim_out=10, **uniform_init(128))
    return brew.softmax(model, pred, 'softmax')


def add_cifar_resnet(model, data, is_test):
    """A CIFAR ResNet (He et al. section 4.2: a 3x3 convolution, three
    stages of 16, 32 and 64 filters, the last two starting with a stride of
    2, global average pooling, FC) with two residual blocks per stage
    (ResNet-14), built with models.resnet's ResNetBuilder; the first
    convolution is padded so that 28x28 images give 7x7 at the end."""
    brew.conv(model, data, 'conv1', 1, 16, kernel=3, pad=1, weight_init=('MSRAFill', {}))
    brew.spatial_bn(model, 'conv1', 'conv1_spatbn', 16, epsilon=1e-3, is_test=is_test)
    brew.relu(model, 'conv1_spatbn', 'relu1')
    builder = resnet.ResNetBuilder(model, 'relu1', no_bias=1, is_test=is_test)
    in_filters = 16
    for stage, filters in enumerate((16, 32, 64)):
        for index in range(2):
            builder.add_simple_block(in_filters, filters,
                                     down_sampling=(stage > 0 and index == 0))
            in_filters = filters
    brew.average_pool(model, builder.prev_blob, 'final_avg', global_pooling=1)
    brew.fc(model, 'final_avg', 'last_out', 64, 10, **uniform_init(64))
    return brew.softmax(model, 'last_out', 'softmax')


# --model of fmnist_train.py and the benches.
MODELS = {'cnn': add_reference_cnn, 'mlp': add_reference_mlp, 'resnet': add_cifar_resnet}


def add_loss_and_accuracy(model, softmax, label):
    xent = model.net.LabelCrossEntropy([softmax, label], 'xent')
    loss = model.net.AveragedLoss(xent, 'loss')
    brew.accuracy(model, [softmax, label], 'accuracy')
    return loss
