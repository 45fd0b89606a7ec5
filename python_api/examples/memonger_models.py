"""Test models for the memonger (blob sharing): a ResNet-style net, whose
skip connections keep activations alive across many layers and make
gradients meet in Sum ops, and an inception-style net, whose parallel
branches give the dag executor ops that may run in any order. Both are
plain brew, NCHW float32 input [N, 3, H, W] (32x32 in the benchmark,
smaller in tests), and return logits; add_softmax_loss adds the loss.

    from memonger_models import add_resnet_style, add_softmax_loss
    logits = add_resnet_style(model, 'data', num_blocks=8, channels=16)
    softmax, loss = add_softmax_loss(model, logits, 'label')
"""
from doppio import brew

IN_CHANNELS = 3
# Every STRIDE_EVERY-th residual block halves the spatial size and doubles
# the channels (as ResNet's stages do), so the skip path needs a projection.
STRIDE_EVERY = 4
BN_ARGS = dict(epsilon=1e-5, momentum=0.9)


def _conv_bn(model, blob_in, name, dim_in, dim_out, kernel, stride, is_test):
    """conv (no bias: the BN's shift replaces it) -> SpatialBN."""
    conv = brew.conv(model, blob_in, name, dim_in=dim_in, dim_out=dim_out, kernel=kernel,
                     stride=stride, pad=kernel // 2, no_bias=True)
    return brew.spatial_bn(model, conv, name + '_bn', dim_out, is_test=is_test, **BN_ARGS)


def _residual_block(model, blob_in, prefix, dim_in, dim_out, stride, is_test):
    """conv-bn-relu-conv-bn, plus the skip (a 1x1 projection when the shape
    changes), then Relu."""
    branch = _conv_bn(model, blob_in, prefix + '_conv1', dim_in, dim_out, 3, stride, is_test)
    branch = brew.relu(model, branch, branch)
    branch = _conv_bn(model, branch, prefix + '_conv2', dim_out, dim_out, 3, 1, is_test)
    if stride != 1 or dim_in != dim_out:
        skip = _conv_bn(model, blob_in, prefix + '_proj', dim_in, dim_out, 1, stride, is_test)
    else:
        skip = blob_in
    summed = brew.sum(model, [branch, skip], prefix + '_sum')
    return brew.relu(model, summed, prefix + '_relu')


def add_resnet_style(model, data, num_blocks=8, channels=16, num_classes=10,
                     is_test=False):
    """stem conv3x3-bn-relu, num_blocks residual blocks (every
    STRIDE_EVERY-th one, from the second stage on, strided with a projected
    skip), global average pool, FC. Returns the logits blob."""
    is_test = int(bool(is_test))
    blob = _conv_bn(model, data, 'stem', IN_CHANNELS, channels, 3, 1, is_test)
    blob = brew.relu(model, blob, blob)
    dim = channels
    for i in range(num_blocks):
        downsample = i > 0 and i % STRIDE_EVERY == 0
        dim_out = dim * 2 if downsample else dim
        blob = _residual_block(model, blob, 'res{}'.format(i), dim, dim_out,
                               2 if downsample else 1, is_test)
        dim = dim_out
    pooled = brew.average_pool(model, blob, 'pool', global_pooling=1)
    return brew.fc(model, pooled, 'logits', dim_in=dim, dim_out=num_classes)


def _conv_relu(model, blob_in, name, dim_in, dim_out, kernel):
    conv = brew.conv(model, blob_in, name, dim_in=dim_in, dim_out=dim_out, kernel=kernel,
                     pad=kernel // 2)
    return brew.relu(model, conv, conv)


def _inception_block(model, blob_in, prefix, dim_in, widths):
    """Four branches joined on channels: 1x1; 1x1->3x3; 1x1->3x3->3x3 (a
    5x5's field); maxpool3x3 s1 -> 1x1. Returns (blob, channels)."""
    w1, w3_reduce, w3, w5_reduce, w5, w_pool = widths
    b1 = _conv_relu(model, blob_in, prefix + '_1x1', dim_in, w1, 1)
    b3 = _conv_relu(model, blob_in, prefix + '_3x3_reduce', dim_in, w3_reduce, 1)
    b3 = _conv_relu(model, b3, prefix + '_3x3', w3_reduce, w3, 3)
    b5 = _conv_relu(model, blob_in, prefix + '_5x5_reduce', dim_in, w5_reduce, 1)
    b5 = _conv_relu(model, b5, prefix + '_5x5a', w5_reduce, w5, 3)
    b5 = _conv_relu(model, b5, prefix + '_5x5b', w5, w5, 3)
    pool = brew.max_pool(model, blob_in, prefix + '_pool', kernel=3, stride=1, pad=1)
    bp = _conv_relu(model, pool, prefix + '_pool_proj', dim_in, w_pool, 1)
    joined = brew.concat(model, [b1, b3, b5, bp], prefix + '_concat', axis=1)
    return joined, w1 + w3 + w5 + w_pool


def add_inception_style(model, data, num_classes=10, is_test=False):
    """stem conv3x3-bn-relu, two inception blocks with a max pool between,
    global average pool, FC. Returns the logits blob."""
    is_test = int(bool(is_test))
    blob = _conv_bn(model, data, 'stem', IN_CHANNELS, 16, 3, 1, is_test)
    blob = brew.relu(model, blob, blob)
    blob, dim = _inception_block(model, blob, 'inc1', 16, (8, 8, 8, 4, 4, 4))
    blob = brew.max_pool(model, blob, 'inc1_down', kernel=2, stride=2)
    blob, dim = _inception_block(model, blob, 'inc2', dim, (8, 8, 12, 4, 8, 4))
    pooled = brew.average_pool(model, blob, 'pool', global_pooling=1)
    return brew.fc(model, pooled, 'logits', dim_in=dim, dim_out=num_classes)


def add_softmax_loss(model, logits, label):
    """(softmax, loss): SoftmaxWithLoss's outputs; the caller scales the loss
    (Parallelize's loss_scale) as it needs."""
    softmax, loss = model.net.SoftmaxWithLoss([logits, label], ['softmax', 'loss'])
    return softmax, loss
