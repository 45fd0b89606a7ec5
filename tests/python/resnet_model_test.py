"""caffe2.python.models.resnet: ResNet-50 built with Caffe2's blob names
runs the same function as an independent torch.nn.functional ResNet-50
written from He et al. (2015) over the same weights; its parameter count is
the published 25,557,032 (1000 classes)."""
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from caffe2.python import brew, core, model_helper, workspace
from caffe2.python.models import resnet

# Published size of ResNet-50 (torchvision's resnet50 weights metadata).
RESNET50_PARAMETERS = 25557032
STAGES = ((3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048))


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def _build(num_labels, is_test, label=None, no_loss=False):
    model = model_helper.ModelHelper(name='resnet50', init_params=True)
    out = resnet.create_resnet50(model, 'data', num_input_channels=3, num_labels=num_labels,
                                 label=label, is_test=is_test, no_loss=no_loss, no_bias=1)
    return model, out


def test_parameter_count_is_resnet50s():
    model, _ = _build(1000, is_test=True)
    workspace.RunNetOnce(model.param_init_net)
    total = sum(workspace.FetchBlob(str(p)).size for p in model.GetParams())
    assert total == RESNET50_PARAMETERS
    names = set(str(p) for p in model.GetParams())
    assert {'conv1_w', 'conv1_spatbn_relu_s', 'comp_0_conv_1_w', 'comp_0_spatbn_3_b',
            'shortcut_projection_0_w', 'shortcut_projection_3_spatbn_s', 'comp_15_conv_3_w',
            'last_out_L1000_w', 'last_out_L1000_b'} <= names
    assert 'shortcut_projection_1_w' not in names  # a block that keeps its width
    # no_bias: convolutions have weights only.
    assert not any(n.endswith('_b') and ('_conv_' in n or n.startswith(('conv1_b', 'shortcut')))
                   and 'spatbn' not in n for n in names)


def _reference(x, weights, num_labels):
    w = {name: torch.from_numpy(value) for name, value in weights.items()}

    def conv(h, name, stride, pad):
        return F.conv2d(h, w[name + '_w'], stride=stride, padding=pad)

    def bn(h, name):
        return F.batch_norm(h, w[name + '_rm'], w[name + '_riv'], w[name + '_s'],
                            w[name + '_b'], training=False, eps=1e-3)

    h = F.relu(bn(conv(torch.from_numpy(x), 'conv1', 2, 3), 'conv1_spatbn_relu'))
    h = F.max_pool2d(h, 3, 2)
    component, in_filters = 0, 64
    for stage, (blocks, base, out_filters) in enumerate(STAGES):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            p = 'comp_{}_'.format(component)
            r = F.relu(bn(conv(h, p + 'conv_1', 1, 0), p + 'spatbn_1'))
            r = F.relu(bn(conv(r, p + 'conv_2', stride, 1), p + 'spatbn_2'))
            r = bn(conv(r, p + 'conv_3', 1, 0), p + 'spatbn_3')
            shortcut = h
            if out_filters > in_filters:
                s = 'shortcut_projection_{}'.format(component)
                shortcut = bn(conv(h, s, stride, 0), s + '_spatbn')
            h = F.relu(shortcut + r)
            component, in_filters = component + 1, out_filters
    h = h.mean(dim=(2, 3))
    fc = 'last_out_L{}'.format(num_labels)
    return F.softmax(h @ w[fc + '_w'].T + w[fc + '_b'], dim=1).numpy()


def test_inference_matches_an_independent_resnet50():
    num_labels = 10
    model, softmax = _build(num_labels, is_test=True)
    assert str(softmax) == 'softmax'
    workspace.RunNetOnce(model.param_init_net)
    rng = np.random.RandomState(0)
    weights = {}
    for blob in model.GetAllParams():
        name = str(blob)
        shape = workspace.FetchBlob(name).shape
        if name.endswith('_riv'):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith('_s'):
            value = rng.uniform(0.5, 1.0, shape)
        elif name.endswith('_w') and len(shape) == 4:
            value = rng.randn(*shape) * np.sqrt(2.0 / np.prod(shape[1:]))
        else:
            value = rng.randn(*shape) * 0.1
        weights[name] = value.astype(np.float32)
        workspace.FeedBlob(name, weights[name])
    x = rng.randn(2, 3, 64, 64).astype(np.float32)
    workspace.FeedBlob('data', x)
    workspace.RunNetOnce(model.net)
    got = workspace.FetchBlob('softmax')
    np.testing.assert_allclose(got, _reference(x, weights, num_labels), rtol=1e-4, atol=1e-6)


def test_training_outputs_and_loss():
    model, (softmax, loss) = _build(5, is_test=False, label='label')
    assert (str(softmax), str(loss)) == ('softmax', 'loss')
    model.AddGradientOperators([loss])
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('data', np.random.RandomState(1).randn(2, 3, 32, 32).astype(np.float32))
    workspace.FeedBlob('label', np.array([1, 3], np.int32))
    workspace.RunNetOnce(model.net)
    probabilities = workspace.FetchBlob('softmax')
    want = -np.mean(np.log(probabilities[[0, 1], [1, 3]]))
    np.testing.assert_allclose(workspace.FetchBlob('loss'), want, rtol=1e-5)
    assert workspace.FetchBlob('conv1_w_grad').shape == (64, 3, 7, 7)


def test_resnet_32x32_shape_and_blocks():
    model = model_helper.ModelHelper(name='resnet20')
    resnet.create_resnet_32x32(model, 'data', num_input_channels=3, num_groups=1,
                               num_labels=10, is_test=True)
    convs = [op for op in model.net.Proto().op if op.type == 'Conv']
    # 1 stem + 3 stages x 2 blocks x 2 convs + 2 projections (width changes).
    assert len(convs) == 15
    assert sum(op.output[0].startswith('shortcut_projection') for op in convs) == 2
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob('data', np.random.RandomState(2).randn(3, 3, 34, 34).astype(np.float32))
    workspace.RunNetOnce(model.net)
    out = workspace.FetchBlob('softmax')
    assert out.shape == (3, 10)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
