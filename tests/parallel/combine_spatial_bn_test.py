"""combine_spatial_bn: a small reference CNN (Conv 1->4, SpatialBN, Relu,
MaxPool, FC; docs/DESIGN.md section 8, shrunk to 8x8 inputs) trained 10 momentum
SGD steps on a global batch of 8. With the option, 1, 2 and 4 devices give
the same params and running statistics (SpatialBN sees the whole batch);
without it, 2 devices equal a single device whose net normalizes each half
of the batch separately, and differ from 1 device on the whole batch."""
import sys

import numpy as np
import pytest

from doppio import brew, data_parallel_model, model_helper, optimizer, workspace
from doppio.model_helper import Initializer

BATCH, STEPS, CHANNELS, SIDE, CLASSES = 8, 10, 4, 8, 3
FC_IN = CHANNELS * (SIDE // 2) * (SIDE // 2)
PARAMS = ['conv_w', 'conv_b', 'bn_s', 'bn_b', 'fc_w', 'fc_b']
RUNNING = ['bn_rm', 'bn_riv']


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def initial_params():
    rng = np.random.RandomState(11)
    return {
        'conv_w': rng.randn(CHANNELS, 1, 3, 3).astype(np.float32) * 0.5,
        'conv_b': rng.randn(CHANNELS).astype(np.float32) * 0.1,
        'bn_s': rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
        'bn_b': rng.randn(CHANNELS).astype(np.float32) * 0.1,
        'fc_w': rng.randn(CLASSES, FC_IN).astype(np.float32) * 0.2,
        'fc_b': rng.randn(CLASSES).astype(np.float32) * 0.1,
    }


def batches():
    rng = np.random.RandomState(5)
    return [((rng.randn(BATCH, 1, SIDE, SIDE) * 2 + 0.5).astype(np.float32),
             rng.randint(0, CLASSES, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


def head(model, normalized, loss_scale):
    hidden = brew.relu(model, normalized, 'relu')
    pooled = brew.max_pool(model, hidden, 'pool', kernel=2, stride=2)
    logits = brew.fc(model, pooled, 'fc', FC_IN, CLASSES)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def cnn(model, loss_scale):
    conv = brew.conv(model, 'data', 'conv', 1, CHANNELS, 3, pad=1)
    return head(model, brew.spatial_bn(model, conv, 'bn', CHANNELS, momentum=0.9), loss_scale)


def cnn_normalizing_halves(model, loss_scale):
    """The CNN with SpatialBN applied to each half of the batch on its own,
    sharing scale and bias: what two devices without combine_spatial_bn do."""
    conv = brew.conv(model, 'data', 'conv', 1, CHANNELS, 3, pad=1)
    params = [model.create_param(param_name='bn_' + suffix, shape=[CHANNELS],
                                 initializer=Initializer('ConstantFill', value=value))
              for suffix, value in [('s', 1.0), ('b', 0.0)]]
    halves = model.net.Split(conv, ['conv_half0', 'conv_half1'], axis=0)
    normalized = []
    for i, half in enumerate(halves):
        normalized.append(model.net.SpatialBN(
            [half] + params + ['bn_rm{}'.format(i), 'bn_riv{}'.format(i)],
            ['bn{}'.format(i), 'bn_rm{}'.format(i), 'bn_riv{}'.format(i),
             'bn{}_sm'.format(i), 'bn{}_siv'.format(i)], momentum=0.9)[0])
        model.param_init_net.ConstantFill([], 'bn_rm{}'.format(i), shape=[CHANNELS], value=0.0)
        model.param_init_net.ConstantFill([], 'bn_riv{}'.format(i), shape=[CHANNELS], value=1.0)
    joined, _ = model.net.Concat(normalized, ['bn', 'bn_split_info'], axis=0)
    return head(model, joined, loss_scale)


def train(num_devices, combine, forward=cnn, net_type='dag'):
    """Returns (model, device 0's params and running statistics) after
    checking every device holds the same values."""
    model = model_helper.ModelHelper(name='bn_{}_{}'.format(num_devices, int(combine)))
    devices = list(range(num_devices))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=devices, num_threads_per_device=1, combine_spatial_bn=combine,
        net_type=net_type)
    data_parallel_model.RunInitNet(model)
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = BATCH // num_devices
    for x, y in batches():
        for i, device in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        data_parallel_model.RunNet(model, 1)
    names = PARAMS + (RUNNING if forward is cnn else [])
    result = {p: workspace.FetchBlob('cpu_0/' + p) for p in names}
    for device in devices[1:]:
        for p in (names if combine else PARAMS):
            np.testing.assert_allclose(workspace.FetchBlob('cpu_{}/{}'.format(device, p)),
                                       result[p], rtol=1e-6, atol=1e-7,
                                       err_msg='device {} {}'.format(device, p))
    return model, result


def assert_same(actual, expected, names):
    for p in names:
        np.testing.assert_allclose(actual[p], expected[p], rtol=1e-4, atol=1e-5, err_msg=p)


def test_combined_statistics_make_1_2_4_devices_equal():
    _, one = train(1, combine=True)
    # conv_b stays put: batch norm removes any per-channel shift before it.
    for p in set(PARAMS) - {'conv_b'}:
        assert not np.allclose(one[p], initial_params()[p]), p  # it trained
    for num_devices in (2, 4):
        workspace.ResetWorkspace()
        _, many = train(num_devices, combine=True)
        assert_same(many, one, PARAMS + RUNNING)


def test_combined_statistics_in_a_simple_net():
    """The rewritten ops are listed in an order a sequential net can run."""
    _, one = train(1, combine=False)
    workspace.ResetWorkspace()
    _, two = train(2, combine=True, net_type='simple')
    assert_same(two, one, PARAMS + RUNNING)


def test_without_the_option_each_device_normalizes_its_own_half():
    _, two = train(2, combine=False)
    workspace.ResetWorkspace()
    _, halves = train(1, combine=False, forward=cnn_normalizing_halves)
    assert_same(two, halves, PARAMS)
    workspace.ResetWorkspace()
    _, whole = train(1, combine=False)
    differs = [p for p in PARAMS
               if not np.allclose(two[p], whole[p], rtol=1e-4, atol=1e-5)]
    assert differs, 'per-device statistics should change training'


def test_rewritten_net_structure():
    model, _ = train(2, combine=True)
    ops = model.net.Proto().op
    by_type = {}
    for op in ops:
        by_type.setdefault(op.type, []).append(op)
    assert sorted(list(op.input) for op in by_type['ChannelStats']) == [
        ['cpu_0/conv'], ['cpu_1/conv']]
    for op in by_type['SpatialBN'] + by_type['SpatialBNGradient']:
        assert len(op.input) == 7
        assert [a.i for a in op.arg if a.name == 'num_batches'] == [2]
    assert len(by_type['ChannelBackpropStats']) == 2
    reduced = sorted(list(op.input) for op in by_type['Allreduce'])
    assert ['cpu_0/bn_channel_sums', 'cpu_1/bn_channel_sums'] in reduced
    assert ['cpu_0/bn_channel_sumsq', 'cpu_1/bn_channel_sumsq'] in reduced
    # Every device's SpatialBN waits for the reduced sums.
    index = {id(op): i for i, op in enumerate(ops)}
    sums_reduce = [i for i, op in enumerate(ops)
                   if op.type == 'Allreduce' and op.input[0] == 'cpu_0/bn_channel_sums']
    assert all(index[id(op)] > sums_reduce[0] for op in by_type['SpatialBN'])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
