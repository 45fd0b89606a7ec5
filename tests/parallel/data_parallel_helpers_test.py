"""doppio.data_parallel_model beyond Parallelize itself: the checkpoint
round trip (save device 0's params, momentum and iteration counter after 5
steps on 4 devices, load them into a fresh 2-device model, 5 more steps ==
10 uninterrupted steps), and Caffe2's helpers Synchronize, AddBlobSync,
GetLearningRateBlobNames, ConvertNetForDevice, ExtractPredictorNet and
GetDevices, with their errors."""
import os
import sys

import numpy as np
import pytest

from doppio import brew, core, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

from mlp_fixture import (BATCH, D_IN, D_OUT, HIDDEN, PARAMS, STEPS, batches,  # noqa: F401
                         forward, fresh_workspace, initial_params)

STATE = PARAMS + [p + '_momentum' for p in PARAMS]


def sgd_with_step_schedule(model):
    # The rate halves every 3 iterations, so resuming with a wrong counter
    # changes the result.
    return optimizer.build_sgd(model, 0.2, momentum=0.9, policy='step', stepsize=3, gamma=0.5)


def parallel_model(num_devices, name):
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name=name)
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=sgd_with_step_schedule, devices=list(range(num_devices)),
        num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    return model


def run_steps(model, steps):
    devices = data_parallel_model.GetDevices(model)
    per_device = BATCH // len(devices)
    for x, y in steps:
        for i, device in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        data_parallel_model.RunNet(model, 1)


def start_from_initial_params(model):
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)


def fetch_state(model):
    for device in data_parallel_model.GetDevices(model)[1:]:
        for name in STATE:
            np.testing.assert_array_equal(workspace.FetchBlob('cpu_{}/{}'.format(device, name)),
                                          workspace.FetchBlob('cpu_0/' + name),
                                          err_msg='device {} {}'.format(device, name))
    state = {name: workspace.FetchBlob('cpu_0/' + name) for name in STATE}
    state['optimizer_iteration'] = workspace.FetchBlob('optimizer_iteration')
    return state


def save_checkpoint(model, path):
    blobs = sorted(str(b) for b in data_parallel_model.GetCheckpointParams(model))
    workspace.RunOperatorOnce(core.CreateOperator('Save', blobs, [], db=path, db_type='minidb',
                                                  absolute_path=1))
    return blobs


def resume(path, blobs, num_devices, counter_override=None):
    model = parallel_model(num_devices, 'resumed_{}'.format(num_devices))
    workspace.RunOperatorOnce(core.CreateOperator('Load', [], blobs, db=path, db_type='minidb',
                                                  absolute_path=1))
    if counter_override is not None:
        workspace.FeedBlob('optimizer_iteration', np.array([counter_override], np.int64))
    data_parallel_model.FinalizeAfterCheckpoint(model)
    return model


def test_checkpoint_round_trip_4_to_2_devices(tmp_path):
    path = os.path.join(str(tmp_path), 'checkpoint.minidb')
    model = parallel_model(4, 'first_half')
    start_from_initial_params(model)
    run_steps(model, batches()[:5])
    blobs = save_checkpoint(model, path)
    assert set(blobs) == set(['cpu_0/' + name for name in STATE] + ['optimizer_iteration'])
    saved = fetch_state(model)
    assert saved['optimizer_iteration'].tolist() == [5]

    workspace.ResetWorkspace()
    model = resume(path, blobs, 2)
    loaded = fetch_state(model)  # also checks device 1 got device 0's values
    for name in saved:
        np.testing.assert_array_equal(loaded[name], saved[name], err_msg=name)
    run_steps(model, batches()[5:])
    resumed = fetch_state(model)

    workspace.ResetWorkspace()
    model = parallel_model(2, 'uninterrupted')
    start_from_initial_params(model)
    run_steps(model, batches())
    uninterrupted = fetch_state(model)
    assert uninterrupted['optimizer_iteration'].tolist() == [STEPS]
    for name in STATE:
        assert not np.allclose(uninterrupted[name], saved[name]), name  # it kept training
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    np.testing.assert_array_equal(resumed['optimizer_iteration'],
                                  uninterrupted['optimizer_iteration'])

    # The counter is part of the state: resuming from 0 replays the high
    # early learning rates and ends elsewhere.
    workspace.ResetWorkspace()
    model = resume(path, blobs, 2, counter_override=0)
    run_steps(model, batches()[5:])
    restarted = fetch_state(model)
    assert not np.allclose(restarted['fc1_w'], uninterrupted['fc1_w'], rtol=1e-5, atol=1e-6)


def test_synchronize_is_a_checked_no_op():
    model = parallel_model(2, 'sync')
    before = set(workspace.Blobs())
    data_parallel_model.Synchronize(model)
    data_parallel_model.Synchronize(model, timeout_sec=5)
    assert set(workspace.Blobs()) == before
    with pytest.raises(ValueError, match='timeout_sec'):
        data_parallel_model.Synchronize(model, timeout_sec=0)
    with pytest.raises(ValueError, match='not parallelized'):
        data_parallel_model.Synchronize(model_helper.ModelHelper(name='plain_sync'))


def test_add_blob_sync_broadcasts_device_0():
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='blob_sync')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=sgd_with_step_schedule, devices=[0, 1, 2],
        num_threads_per_device=1)
    data_parallel_model.AddBlobSync(model, ['extra'])
    last = model.net.Proto().op[-1]
    assert last.type == 'Broadcast'
    assert list(last.input) == ['cpu_0/extra', 'cpu_1/extra', 'cpu_2/extra']
    assert sorted(model._device_grouped_blobs['extra']) == [0, 1, 2]
    for device in range(3):
        workspace.FeedBlob('cpu_{}/extra'.format(device), np.full(4, device + 1.0, np.float32))
    data_parallel_model.RunInitNet(model)
    run_steps(model, batches()[:1])
    for device in range(3):
        np.testing.assert_array_equal(workspace.FetchBlob('cpu_{}/extra'.format(device)),
                                      np.full(4, 1.0, np.float32))
    with pytest.raises(ValueError, match='unprefixed'):
        data_parallel_model.AddBlobSync(model, ['cpu_0/extra'])
    with pytest.raises(ValueError, match='shared'):
        data_parallel_model.AddBlobSync(model, ['optimizer_iteration'])


def test_learning_rate_blob_names():
    model = parallel_model(2, 'lr_names')
    names = data_parallel_model.GetLearningRateBlobNames(model)
    assert names == ['SgdOptimizer_0_lr_cpu']
    learning_rate_ops = [op for op in model.net.Proto().op if op.type == 'LearningRate']
    assert [op.output[0] for op in learning_rate_ops] == names  # one shared rate
    run_steps(model, batches()[:1])
    # MomentumSGDUpdate subtracts the rate: the first step's is +0.2.
    np.testing.assert_allclose(np.ravel(workspace.FetchBlob(names[0])), [0.2], rtol=1e-6)

    # Without an optimizer object: the LearningRate ops' outputs.
    def update(m):
        iteration = m.param_init_net.ConstantFill([], 'optimizer_iteration', shape=[1], value=0,
                                                  dtype=core.DataType.INT64)
        m.net.Iter(iteration, iteration)
        m.net.LearningRate(iteration, 'my_lr', base_lr=-0.1, policy='fixed')
    workspace.ResetWorkspace()
    model = model_helper.ModelHelper(name='lr_manual')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        param_update_builder_fun=update, devices=[0, 1])
    # A rate not named like an optimizer's is per device, as in Caffe2.
    assert data_parallel_model.GetLearningRateBlobNames(model) == ['cpu_0/my_lr', 'cpu_1/my_lr']


def test_convert_net_for_device():
    net = core.Net('to_convert')
    net.Proto().external_input.extend(['x', 'w'])
    net.FC(['x', 'w', 'b'], 'y')
    net.Proto().external_output.append('y')
    device = core.DeviceOption(doppio_pb2.CPU, 3)
    converted = data_parallel_model.ConvertNetForDevice(net, device)
    op = converted.Proto().op[0]
    assert list(op.input) == ['cpu_3/x', 'cpu_3/w', 'cpu_3/b']
    assert list(op.output) == ['cpu_3/y']
    assert op.device_option.cuda_gpu_id == 3
    assert list(converted.Proto().external_input) == [
        'cpu_3/' + b for b in net.Proto().external_input]
    assert list(converted.Proto().external_output) == ['cpu_3/y']
    assert list(net.Proto().op[0].input) == ['x', 'w', 'b']  # the original is untouched
    with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU, 1)):
        scoped = data_parallel_model.ConvertNetForDevice(net)
    assert list(scoped.Proto().op[0].output) == ['cpu_1/y']
    with pytest.raises(ValueError, match='DeviceScope'):
        data_parallel_model.ConvertNetForDevice(net)


def test_extract_predictor_net_from_device_0():
    def test_forward(model, loss_scale):
        hidden = brew.fc(model, 'data', 'fc1', D_IN, HIDDEN)
        hidden = brew.relu(model, hidden, 'relu1')
        logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
        model.net.Softmax(logits, 'softmax')
        return []
    model = model_helper.ModelHelper(name='to_predict')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=test_forward,
        devices=[0, 1])
    device = core.DeviceOption(doppio_pb2.CPU, 0)
    predict_net, export_blobs = data_parallel_model.ExtractPredictorNet(
        model, ['data'], ['softmax'], device)
    ops = predict_net.Proto().op
    assert [op.type for op in ops] == ['FC', 'Relu', 'FC', 'Softmax']
    assert ops[0].input[0] == 'data' and ops[-1].output[0] == 'softmax'
    for op in ops:
        assert not any(b.startswith('cpu_1/') for b in list(op.input) + list(op.output))
    assert set(export_blobs) >= {'cpu_0/fc1_w', 'cpu_0/fc1_b', 'cpu_0/fc2_w', 'cpu_0/fc2_b'}

    # The extracted net computes device 0's softmax.
    workspace.RunNetOnce(model.param_init_net)
    x = np.random.RandomState(0).randn(2, D_IN).astype(np.float32)
    workspace.FeedBlob('data', x)
    workspace.RunNetOnce(predict_net)
    w1, b1, w2, b2 = [workspace.FetchBlob('cpu_0/' + p) for p in PARAMS]
    logits = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(workspace.FetchBlob('softmax'), expected, rtol=1e-5, atol=1e-6)


def test_get_devices_and_errors():
    model = parallel_model(2, 'errors')
    assert data_parallel_model.GetDevices(model) == [0, 1]
    with pytest.raises(ValueError, match='not parallelized'):
        data_parallel_model.GetDevices(model_helper.ModelHelper(name='plain'))
    with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU, 0)):
        with pytest.raises(ValueError, match='device scope'):
            data_parallel_model.Parallelize_CPU(
                model_helper.ModelHelper(name='scoped'), lambda m: None, forward,
                optimizer_builder_fun=sgd_with_step_schedule, devices=[0])
    # None is a builder that forgot to return its losses; [] is a model with
    # nothing to train, which Caffe2 accepts (see data_parallel_test.py).
    for no_losses in (None,):
        with pytest.raises(ValueError, match='loss'):
            data_parallel_model.Parallelize_CPU(
                model_helper.ModelHelper(name='no_loss'), lambda m: None,
                lambda m, s: no_losses, optimizer_builder_fun=sgd_with_step_schedule,
                devices=[0, 1])
        with pytest.raises(ValueError, match='loss'):
            data_parallel_model.Parallelize_CPU(
                model_helper.ModelHelper(name='no_loss_update'), lambda m: None,
                lambda m, s: no_losses, param_update_builder_fun=lambda m: None,
                devices=[0, 1])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
