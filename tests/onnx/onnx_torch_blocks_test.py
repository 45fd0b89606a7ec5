"""Blocks of torchvision's architectures, built in torch, exported by
torch.onnx (opset 13) and run by doppio.onnx.backend with the inference
passes on (the default) and off, against torch's own outputs: the fusions
(Conv + Clip/Sigmoid/Swish/Relu, grouped and depthwise, Sigmoid * x ->
Swish) and the kernels they reach must compute what torch computes."""
import io
import sys
import warnings

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from doppio.onnx import backend
from doppio.onnx.errors import RuntimeValueNeeded


def bn(channels):
    layer = nn.BatchNorm2d(channels)
    with torch.no_grad():  # statistics away from the identity: the fold does work
        layer.running_mean.uniform_(-0.2, 0.2)
        layer.running_var.uniform_(0.5, 1.5)
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.uniform_(-0.2, 0.2)
    return layer


class InvertedResidual(nn.Module):
    """MobileNetV2: 1x1 expand, depthwise 3x3, ReLU6, 1x1 project, residual."""

    def __init__(self, channels=8, expand=4):
        super().__init__()
        hidden = channels * expand
        self.body = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False), bn(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False), bn(hidden),
            nn.ReLU6(), nn.Conv2d(hidden, channels, 1, bias=False), bn(channels))

    def forward(self, x):
        return x + self.body(x)


class MBConvSE(nn.Module):
    """EfficientNet: SiLU, depthwise 5x5 at stride 2, squeeze-excitation."""

    def __init__(self, channels=8):
        super().__init__()
        hidden = channels * 4
        self.expand = nn.Sequential(nn.Conv2d(channels, hidden, 1, bias=False), bn(hidden),
                                    nn.SiLU())
        self.depthwise = nn.Sequential(
            nn.Conv2d(hidden, hidden, 5, stride=2, padding=2, groups=hidden, bias=False),
            bn(hidden), nn.SiLU())
        self.squeeze = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(hidden, 4, 1), nn.SiLU(),
                                     nn.Conv2d(4, hidden, 1), nn.Sigmoid())
        self.project = nn.Sequential(nn.Conv2d(hidden, 16, 1, bias=False), bn(16))

    def forward(self, x):
        h = self.depthwise(self.expand(x))
        return self.project(h * self.squeeze(h))


class GroupedTanhElu(nn.Module):
    """Grouped convolutions followed by the other fusable activations."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(8, 16, 3, padding=1, groups=2)
        self.b = nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.c = nn.Conv2d(16, 8, 1)

    def forward(self, x):
        h = torch.tanh(self.a(x))
        h = nn.functional.elu(self.b(h), alpha=0.5)
        return nn.functional.leaky_relu(self.c(h), 0.2)


class BasicBlockPool(nn.Module):
    """ResNet: stem, max pooling 3x3/2, a basic block, global pooling, FC."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(8, 16, 7, stride=2, padding=3, bias=False), bn(16),
                                  nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1))
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), bn(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1, bias=False), bn(16))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        h = self.stem(x)
        h = torch.relu(h + self.block(h))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))


class ShuffleUnit(nn.Module):
    """ShuffleNetV2: torch.chunk and the channel shuffle export as Shape ->
    Gather -> Div -> Slice / Reshape chains, which conversion folds once the
    fed shape is known."""

    def __init__(self, channels=8):
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(
            nn.Conv2d(half, half, 1, bias=False), bn(half), nn.ReLU(),
            nn.Conv2d(half, half, 3, padding=1, groups=half, bias=False), bn(half),
            nn.Conv2d(half, half, 1, bias=False), bn(half), nn.ReLU())

    def forward(self, x):
        left, right = x.chunk(2, dim=1)
        out = torch.cat((left, self.branch(right)), dim=1)
        batch, channels, height, width = out.size()
        out = out.view(batch, 2, channels // 2, height, width).transpose(1, 2).contiguous()
        return out.view(batch, -1, height, width)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7x7, channels-last LayerNorm, Linear, GELU,
    Linear, layer scale, residual. torch exports LayerNorm and GELU at opset
    13 as chains of ReduceMean/Sub/Pow/... and Div/Erf/Add/Mul, which the
    import folds back (doppio/onnx/patterns.py)."""

    def __init__(self, channels=8):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        self.up = nn.Linear(channels, 4 * channels)
        self.down = nn.Linear(4 * channels, channels)
        self.scale = nn.Parameter(torch.rand(channels, 1, 1))
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        h = self.depthwise(x).permute(0, 2, 3, 1)
        h = self.down(nn.functional.gelu(self.up(self.norm(h))))
        return x + self.scale * h.permute(0, 3, 1, 2)


class PlainLayerNormGelu(nn.Module):
    """LayerNorm over the last two dims without affine parameters, and the
    (x * 0.5) * (1 + erf(x / sqrt 2)) spelling of GELU."""

    def forward(self, x):
        h = nn.functional.layer_norm(x, x.shape[-2:], eps=1e-5)
        return (h * 0.5) * (1.0 + torch.erf(h / 1.4142135623730951))


class MobileNetV3Block(nn.Module):
    """MobileNetV3: Hardswish, depthwise 5x5, squeeze-excitation gated by
    Hardsigmoid (torch exports hardswish as HardSigmoid * x)."""

    def __init__(self, channels=8):
        super().__init__()
        hidden = channels * 3
        self.expand = nn.Sequential(nn.Conv2d(channels, hidden, 1, bias=False), bn(hidden),
                                    nn.Hardswish())
        self.depthwise = nn.Sequential(
            nn.Conv2d(hidden, hidden, 5, padding=2, groups=hidden, bias=False), bn(hidden),
            nn.Hardswish())
        self.squeeze = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(hidden, 8, 1), nn.ReLU(),
                                     nn.Conv2d(8, hidden, 1), nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1, bias=False), bn(channels))

    def forward(self, x):
        h = self.depthwise(self.expand(x))
        return x + self.project(h * self.squeeze(h))


BLOCKS = {
    'mobilenet_v3_block': MobileNetV3Block,
    'convnext_block': ConvNeXtBlock,
    'plain_layer_norm_gelu': PlainLayerNormGelu,
    'shuffle_unit': ShuffleUnit,
    'inverted_residual': InvertedResidual,
    'mbconv_se': MBConvSE,
    'grouped_tanh_elu': GroupedTanhElu,
    'basic_block_pool': BasicBlockPool,
}


def export(model, x, dynamic_batch=False):
    buffer = io.BytesIO()
    # With static shapes torch folds the shape arithmetic itself; a dynamic
    # batch keeps it in the graph (Shape -> Gather -> ... -> Reshape).
    dynamic_axes = {'x': {0: 'N'}, 'y': {0: 'N'}} if dynamic_batch else None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, x, buffer, opset_version=13, input_names=['x'],
                          output_names=['y'], dynamic_axes=dynamic_axes)
    return buffer.getvalue()


@pytest.mark.parametrize('name', sorted(BLOCKS))
@pytest.mark.parametrize('batch', [1, 3])
def test_block_matches_torch(name, batch):
    torch.manual_seed(len(name) + batch)
    model = BLOCKS[name]().eval()
    x = torch.randn(batch, 8, 20, 20) * 2
    with torch.no_grad():
        expected = model(x).numpy()
    onnx_bytes = export(model, x)
    for optimize in (True, False):
        rep = backend.prepare(onnx_bytes, optimize=optimize)
        got = rep.run([x.numpy()])[0]
        scale = np.abs(expected).max()
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale,
                                   err_msg='%s optimize=%s' % (name, optimize))
        types = [op.type for op in rep.running_net.op]
        if name in ('convnext_block', 'plain_layer_norm_gelu'):
            assert types.count('LayerNorm') == 1 and types.count('Gelu') == 1, types
            assert 'Erf' not in types and 'ReduceMean' not in types, types
            continue
        if optimize:
            # Every activation went into a ConvFusion (or, for SE's gate and
            # the sum's Relu, stayed where no Conv produces its input).
            assert 'SpatialBN' not in types, types
            assert types.count('ConvFusion') >= 2, types
            assert 'Sigmoid' not in types or name == 'mbconv_se', types
            assert 'Clip' not in types, types
        else:
            assert 'ConvFusion' not in types, types


@pytest.mark.parametrize('name', sorted(BLOCKS))
def test_block_in_channels_last_matches_torch(name):
    """optimize='all' adds the NHWC rewrite of the convolutional regions."""
    torch.manual_seed(len(name))
    model = BLOCKS[name]().eval()
    x = torch.randn(2, 8, 20, 20) * 2
    with torch.no_grad():
        expected = model(x).numpy()
    rep = backend.prepare(export(model, x), optimize='all')
    got = rep.run([x.numpy()])[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    orders = [arg.s.decode() for op in rep.running_net.op for arg in op.arg
              if arg.name == 'order']
    has_conv = any(isinstance(m, nn.Conv2d) for m in model.modules())
    assert ('NHWC' in orders) == has_conv, [op.type for op in rep.running_net.op]


def test_folded_shapes_follow_the_fed_batch():
    """A ShuffleNet unit exported with a dynamic batch runs at batch 1, 3
    and 1 again: the shape arithmetic is folded for each fed shape."""
    torch.manual_seed(3)
    model = ShuffleUnit().eval()
    onnx_bytes = export(model, torch.randn(1, 8, 10, 10), dynamic_batch=True)
    assert b'Shape' in onnx_bytes
    rep = backend.prepare(onnx_bytes)
    for batch in (1, 3, 1):
        x = torch.randn(batch, 8, 10, 10)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(rep.run([x.numpy()])[0], expected, rtol=1e-4, atol=1e-5)
    # Converting without running cannot know the shapes: a clear error.
    with pytest.raises(RuntimeValueNeeded, match='computed by the graph'):
        backend.onnx_graph_to_caffe2_net(onnx.load_from_string(onnx_bytes))


def test_hard_swish_fused_into_conv():
    model = MobileNetV3Block().eval()
    x = torch.randn(1, 8, 12, 12)
    rep = backend.prepare(export(model, x))
    rep.run([x.numpy()])
    activations = [arg.s.decode() for op in rep.running_net.op if op.type == 'ConvFusion'
                   for arg in op.arg if arg.name == 'activation']
    assert activations.count('HardSwish') == 2, activations


def test_swish_fused_into_conv():
    """SiLU after a Conv ends up as one ConvFusion(activation='Swish')."""
    model = MBConvSE().eval()
    x = torch.randn(1, 8, 16, 16)
    rep = backend.prepare(export(model, x))
    rep.run([x.numpy()])
    activations = [arg.s.decode() for op in rep.running_net.op if op.type == 'ConvFusion'
                   for arg in op.arg if arg.name == 'activation']
    assert activations.count('Swish') == 3, activations
    assert 'Sigmoid' in activations, activations  # the SE gate's 1x1 conv


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs']))
