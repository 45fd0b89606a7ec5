"""Three training steps of the example's reference CNN (brew layers,
AddGradientOperators, build_sgd with momentum) against the same steps in
PyTorch from the same initial parameters: losses, every trained parameter
and the BatchNorm running statistics must agree.

PyTorch is the independent reference here: its autograd and SGD share no code
with ours, and its SGD with momentum (buf = m * buf + g; p -= lr * buf) is
Caffe2's MomentumSGDUpdate at a constant learning rate.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from caffe2.python import core, model_helper, optimizer, workspace
from python_api.examples import fmnist_train as example

BATCH = 16
STEPS = 3
LR = 0.05
MOMENTUM = 0.9


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def build_doppio_model():
    model = model_helper.ModelHelper(name='cnn_step')
    model.param_init_net.ConstantFill([], 'pixel_shift', shape=[1],
                                      value=-example.PIXEL_MEAN / example.PIXEL_STD)
    data = example.add_preprocessing(model, 'data_uint8')
    softmax = example.add_reference_cnn(model, data, is_test=0)
    loss = example.add_loss_and_accuracy(model, softmax, 'label')
    model.AddGradientOperators([loss])
    optimizer.build_sgd(model, base_learning_rate=LR, policy='fixed', momentum=MOMENTUM,
                        nesterov=False)
    return model


def torch_params_from_workspace():
    def t(name):
        return torch.tensor(workspace.FetchBlob(name).copy(), requires_grad=True)
    return {name: t(name) for name in
            ['conv1_w', 'conv1_b', 'bn1_s', 'bn1_b', 'conv2_w', 'conv2_b', 'bn2_s',
             'bn2_b', 'fc3_w', 'fc3_b', 'pred_w', 'pred_b']}


def torch_forward(p, stats, x):
    def block(x, conv, bn):
        x = F.conv2d(x, p[conv + '_w'], p[conv + '_b'], padding=1)
        x = F.batch_norm(x, stats[bn + '_rm'], stats[bn + '_riv'], p[bn + '_s'],
                         p[bn + '_b'], training=True, momentum=1 - 0.9, eps=1e-5)
        return F.max_pool2d(F.relu(x), 2)
    x = block(block(x, 'conv1', 'bn1'), 'conv2', 'bn2')
    x = F.relu(F.linear(x.flatten(1), p['fc3_w'], p['fc3_b']))
    return F.linear(x, p['pred_w'], p['pred_b'])


def assert_close_but_for_pooling_ties(actual, expected, what):
    """Where two pooled values differ only by rounding, the two frameworks
    may pick different maxima: that moves the few weights fed by that
    window (one 3x3 kernel slice: up to ~3% of conv1_w) by up to ~1e-4.
    A wrong gradient or update rule (even momentum 0.85 for 0.9) moves
    nearly every weight of a layer, so: almost all elements tight, and
    none far off."""
    off = ~np.isclose(actual, expected, rtol=2e-4, atol=2e-5)
    assert off.mean() <= 0.05, '{}: {} of {} elements differ (max {})'.format(
        what, off.sum(), off.size, np.abs(actual - expected).max())
    np.testing.assert_allclose(actual, expected, rtol=0, atol=5e-4, err_msg=what)


def test_three_momentum_sgd_steps_match_pytorch():
    # Real images: on random noise the loss explodes within three steps.
    args = example.parse_args(['--workdir', '/nonexistent'])
    images, labels = example.read_idx(args, 'test', BATCH * STEPS)
    batches = [(images[i * BATCH:(i + 1) * BATCH], labels[i * BATCH:(i + 1) * BATCH])
               for i in range(STEPS)]

    model = build_doppio_model()
    workspace.RunNetOnce(model.param_init_net)
    # The reference really is independent: check it is the net we think it is.
    assert sorted(str(p) for p in model.GetParams()) == sorted(
        torch_params_from_workspace())

    workspace.FeedBlob('data_uint8', batches[0][0])
    workspace.FeedBlob('label', batches[0][1])
    workspace.CreateNet(model.net)
    for step, (images, labels) in enumerate(batches):
        # Each step starts PyTorch from our current state (params, momentum,
        # BN statistics), so each comparison is of one step: where two pooled
        # values differ only by rounding the frameworks may pick different
        # maxima, and over a trajectory those tiny differences would compound.
        params = torch_params_from_workspace()
        stats = {name: torch.tensor(workspace.FetchBlob(name).copy())
                 for name in ['bn1_rm', 'bn1_riv', 'bn2_rm', 'bn2_riv']}
        sgd = torch.optim.SGD(list(params.values()), lr=LR, momentum=MOMENTUM)
        if step > 0:
            # Caffe2's moment is lr times PyTorch's momentum buffer.
            for name, param in params.items():
                sgd.state[param]['momentum_buffer'] = torch.tensor(
                    workspace.FetchBlob(name + '_momentum') / LR)

        workspace.FeedBlob('data_uint8', images)
        workspace.FeedBlob('label', labels)
        workspace.RunNet(model.net.Proto().name)

        x = (torch.tensor(images, dtype=torch.float32) / 255.0 - example.PIXEL_MEAN) \
            / example.PIXEL_STD
        sgd.zero_grad()
        loss = F.cross_entropy(torch_forward(params, stats, x),
                               torch.tensor(labels, dtype=torch.int64))
        loss.backward()
        sgd.step()

        np.testing.assert_allclose(workspace.FetchBlob('loss'), loss.item(),
                                   rtol=1e-5, err_msg='loss at step {}'.format(step))
        for name, value in params.items():
            assert_close_but_for_pooling_ties(workspace.FetchBlob(name),
                                              value.detach().numpy(),
                                              '{} after step {}'.format(name, step))
        for name, value in stats.items():
            np.testing.assert_allclose(
                workspace.FetchBlob(name), value.numpy(), rtol=1e-4, atol=1e-6,
                err_msg='{} after step {}'.format(name, step))


if __name__ == '__main__':
    import sys
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
