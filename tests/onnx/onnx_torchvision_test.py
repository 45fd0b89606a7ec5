"""torchvision's classification architectures exported by torch.onnx at
opsets 11 to 17, imported by doppio.onnx.backend and run against PyTorch
(random weights, BatchNorm statistics and zero-initialized heads made
random, 224x224): outputs within 1e-4 of PyTorch's largest.

One member of each family at one opset runs here, the transformers (Swin,
MaxViT, ViT) among them; DOPPIO_TORCHVISION_ALL=1 runs every family at
opsets 11, 13 and 17 (about 10 minutes on two cores). What torch itself
cannot export is listed with the reason: swin_v2 (aten::zero) at every
opset, and MaxViT's Einsum before opset 12."""
import io
import os
import warnings

import numpy as np
import pytest

torch = pytest.importorskip('torch')
torchvision = pytest.importorskip('torchvision')
backend = pytest.importorskip('doppio.onnx.backend')

# One opset each by default.
DEFAULT = [('swin_t', 13), ('maxvit_t', 17), ('vit_b_32', 11), ('shufflenet_v2_x0_5', 11),
           ('mobilenet_v3_small', 17), ('efficientnet_b0', 13), ('regnet_y_400mf', 17),
           ('googlenet', 11), ('squeezenet1_1', 13), ('mnasnet0_5', 17)]
FAMILIES = ['alexnet', 'convnext_tiny', 'densenet121', 'efficientnet_b0', 'efficientnet_v2_s',
            'googlenet', 'inception_v3', 'maxvit_t', 'mnasnet0_5', 'mobilenet_v2',
            'mobilenet_v3_small', 'regnet_x_400mf', 'regnet_y_400mf', 'resnet18',
            'resnext50_32x4d', 'shufflenet_v2_x0_5', 'squeezenet1_1', 'swin_t', 'vgg11',
            'vit_b_32', 'wide_resnet50_2']
TORCH_CANNOT_EXPORT = {('maxvit_t', 11): 'torch exports Einsum from opset 12 only'}


def _cases():
    if os.environ.get('DOPPIO_TORCHVISION_ALL', '') in ('', '0', 'false'):
        return DEFAULT
    return [(name, opset) for name in FAMILIES for opset in (11, 13, 17)
            if (name, opset) not in TORCH_CANNOT_EXPORT]


def _model(name):
    torch.manual_seed(11)
    kwargs = dict(weights=None)
    if name in ('googlenet', 'inception_v3'):
        kwargs.update(aux_logits=False, init_weights=True)
    model = getattr(torchvision.models, name)(**kwargs).eval()
    generator = torch.Generator().manual_seed(12)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                shape = module.running_mean.shape
                module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(shape, generator=generator) * 0.5 + 0.75)
        for parameter in model.parameters():
            if parameter.dim() > 1 and not parameter.any():  # ViT's zeroed head
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
    return model


@pytest.mark.parametrize('name,opset', _cases())
def test_torchvision_model_matches_torch(name, opset):
    model = _model(name)
    x = torch.from_numpy(np.random.RandomState(0).randn(1, 3, 224, 224).astype(np.float32))
    with torch.no_grad():
        want = model(x).numpy()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, x, buffer, opset_version=opset, input_names=['x'],
                          output_names=['y'])
    got = backend.prepare(buffer.getvalue()).run([x.numpy()])[0]
    assert got.shape == want.shape
    assert np.abs(want).max() > 0  # a model whose output is all zeros checks nothing
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 1e-4 * scale, (np.abs(got - want).max(), scale)


if __name__ == '__main__':
    import sys
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
