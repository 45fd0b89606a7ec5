"""doppio.data_parallel_model on CPU devices: the same global batch of 8 split
across 1, 2 and 4 devices trains to the same parameters (momentum SGD), plain
SGD on 2 devices matches a numpy MLP trained on the whole batch, and
Caffe2's errors for bad use."""
import sys

import numpy as np
import pytest

from doppio import brew, core, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

import mlp_reference
from mlp_fixture import (BATCH, D_IN, D_OUT, HIDDEN, PARAMS, STEPS, batches,  # noqa: F401
                         forward, fresh_workspace, initial_params)


def train(num_devices, momentum, steps=STEPS):
    """Trains on `num_devices` CPU devices, each fed its slice of every
    batch; returns device 0's params (after checking all devices agree)."""
    model = model_helper.ModelHelper(name='dp_{}'.format(num_devices))
    devices = list(range(num_devices))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=momentum),
        devices=devices, num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = BATCH // num_devices
    for x, y in batches()[:steps]:
        for i, device in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        data_parallel_model.RunNet(model, 1)
    result = {p: workspace.FetchBlob('cpu_0/' + p) for p in PARAMS}
    for device in devices[1:]:
        for p in PARAMS:
            np.testing.assert_array_equal(workspace.FetchBlob('cpu_{}/{}'.format(device, p)),
                                          result[p], err_msg='device {} {}'.format(device, p))
    return model, result


def numpy_sgd(lr, steps=STEPS):
    """Plain SGD on the whole batch: an independent MLP forward/backward."""
    return mlp_reference.numpy_sgd(initial_params(), batches()[:steps], lr)


def test_same_params_on_1_2_4_devices_with_momentum():
    _, one = train(1, momentum=0.9)
    workspace.ResetWorkspace()
    _, two = train(2, momentum=0.9)
    workspace.ResetWorkspace()
    _, four = train(4, momentum=0.9)
    for p in PARAMS:
        assert not np.allclose(one[p], initial_params()[p]), p  # it trained
        np.testing.assert_allclose(two[p], one[p], rtol=1e-5, atol=1e-6, err_msg=p)
        np.testing.assert_allclose(four[p], one[p], rtol=1e-5, atol=1e-6, err_msg=p)


def test_plain_sgd_on_2_devices_matches_numpy():
    _, result = train(2, momentum=0.0)
    expected = numpy_sgd(0.1)
    for p in PARAMS:
        np.testing.assert_allclose(result[p], expected[p], rtol=1e-4, atol=1e-5, err_msg=p)


def test_structure_and_bookkeeping():
    model, _ = train(2, momentum=0.9, steps=1)
    ops = model.net.Proto().op
    allreduces = [op for op in ops if op.type == 'Allreduce']
    assert sorted(list(op.input) for op in allreduces) == sorted(
        [['cpu_0/{}_grad'.format(p), 'cpu_1/{}_grad'.format(p)] for p in PARAMS])
    # The shared counter is incremented once per step, not once per device.
    assert [op.output[0] for op in ops if op.type == 'AtomicIter'] == ['optimizer_iteration']
    assert workspace.FetchBlob('optimizer_iteration').tolist() == [1]
    assert model.net.Proto().type == 'dag'
    init_ops = model.param_init_net.Proto().op
    broadcasts = sorted(list(op.input) for op in init_ops if op.type == 'Broadcast')
    assert broadcasts == sorted([['cpu_0/' + p, 'cpu_1/' + p] for p in PARAMS])
    assert [str(p) for p in model.params] == ['cpu_{}/{}'.format(d, p)
                                              for d in (0, 1) for p in PARAMS]
    assert data_parallel_model.GetDevices(model) == [0, 1]
    checkpoint = set(str(b) for b in data_parallel_model.GetCheckpointParams(model))
    assert checkpoint == set(['cpu_0/' + p for p in PARAMS] +
                             ['cpu_0/{}_momentum'.format(p) for p in PARAMS] +
                             ['optimizer_iteration'])
    for op in ops:
        if op.output and op.output[0].startswith('cpu_1/'):
            assert op.device_option.device_type == doppio_pb2.CPU
            assert op.device_option.cuda_gpu_id == 1


def test_finalize_after_checkpoint_copies_device_0():
    model, _ = train(2, momentum=0.9, steps=1)
    workspace.FeedBlob('cpu_0/fc1_w', np.full((HIDDEN, D_IN), 2.5, np.float32))
    data_parallel_model.FinalizeAfterCheckpoint(model)
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/fc1_w'),
                                  np.full((HIDDEN, D_IN), 2.5, np.float32))


def parallelize(**kwargs):
    model = model_helper.ModelHelper(name='dp_error')
    args = dict(input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
                optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1),
                devices=[0, 1])
    args.update(kwargs)
    return data_parallel_model.Parallelize_CPU(model, **args)


def test_errors():
    with core.DeviceScope(core.DeviceOption(doppio_pb2.CPU, 0)):
        with pytest.raises(ValueError, match='device scope'):
            parallelize()
    with pytest.raises(ValueError, match='loss'):
        parallelize(forward_pass_builder_fun=lambda m, s: None)
    with pytest.raises(ValueError, match='not both'):
        parallelize(param_update_builder_fun=lambda m: None)
    with pytest.raises(RuntimeError, match='device list is empty'):
        parallelize(devices=[])
    with pytest.raises(RuntimeError, match='device 1 is listed twice'):
        parallelize(devices=[1, 1])
    with pytest.raises(ValueError, match='not parallelized'):
        data_parallel_model.RunInitNet(model_helper.ModelHelper(name='plain'))


# Every option Parallelize checks, with a bad value: each must raise a
# ValueError (whichever side checks it, Python or the C++ pass) whose
# message names the option, and change nothing.
STORE = dict(kv_handler='store', num_shards=2, shard_id=0)
BAD_OPTIONS = [
    (dict(devices=[]), 'devices'),
    (dict(devices=[-1]), 'devices'),
    (dict(devices=[1, 1]), 'devices'),
    (dict(devices=['a']), 'devices'),
    (dict(num_threads_per_device=0), 'num_threads_per_device'),
    (dict(num_threads_per_device='many'), 'num_threads_per_device'),
    (dict(net_type=''), 'net_type'),
    (dict(net_type=3), 'net_type'),
    (dict(accumulate_steps=0), 'accumulate_steps'),
    (dict(accumulate_steps=1.5), 'accumulate_steps'),
    (dict(precision='fp8'), 'precision'),
    (dict(precision=16), 'precision'),
    (dict(dynamic_loss_scale='yes'), 'dynamic_loss_scale'),
    (dict(init_loss_scale=0), 'init_loss_scale'),
    (dict(init_loss_scale=float('inf')), 'init_loss_scale'),
    (dict(init_loss_scale='big'), 'init_loss_scale'),
    (dict(loss_scale_growth_interval=0), 'loss_scale_growth_interval'),
    (dict(max_concurrent_distributed_ops=0), 'max_concurrent_distributed_ops'),
    (dict(barrier_net_timeout_sec=0), 'barrier_net_timeout_sec'),
    (dict(barrier_net_timeout_sec='soon'), 'barrier_net_timeout_sec'),
    (dict(shard_optimizer_state=True, shared_model=True), 'shard_optimizer_state'),
    (dict(rendezvous=dict(STORE, shard_id=5)), 'shard_id'),
    (dict(rendezvous=dict(STORE, timeout_ms=0)), 'timeout_ms'),
    (dict(rendezvous=dict(STORE, timeout_ms='long')), 'timeout_ms'),
    (dict(rendezvous=dict(STORE, bucket_cap_mb=-1)), 'bucket_cap_mb'),
    (dict(rendezvous=dict(STORE, colour='red')), 'colour'),
    (dict(rendezvous=dict(STORE, num_shards='two')), 'num_shards'),
]


@pytest.mark.parametrize('options,name', BAD_OPTIONS,
                         ids=['{}-{}'.format(name, i) for i, (_, name) in enumerate(BAD_OPTIONS)])
def test_each_bad_option_is_a_value_error_naming_it(options, name):
    before = set(workspace.Blobs())
    with pytest.raises(ValueError, match=name):
        parallelize(**options)
    assert set(workspace.Blobs()) == before


def test_errors_of_the_pass_keep_their_kind_and_are_runtime_errors():
    from doppio import errors
    with pytest.raises(errors.InvalidArgumentError) as raised:
        parallelize(devices=[0, 0])
    # Caffe2 raised RuntimeError for all of them: code catching that still works.
    assert isinstance(raised.value, RuntimeError) and isinstance(raised.value, ValueError)
    assert '[data_parallel_planning.cc:' in str(raised.value)  # the check's file and line
    with pytest.raises(NotImplementedError, match='rendezvous engine'):
        parallelize(rendezvous=dict(STORE, engine='MPI'))


def test_model_with_nothing_to_train_parallelizes_and_runs():
    # Caffe2's barrier tests build such a model: no loss, no gradients.
    model = model_helper.ModelHelper(name='empty')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=lambda m, s: [],
        optimizer_builder_fun=lambda m: None, devices=[0, 1])
    assert not [op for op in model.net.Proto().op if op.is_gradient_op]
    data_parallel_model.RunInitNet(model)
    data_parallel_model.RunNet(model, 1)


def test_caffe2_alias():
    from caffe2.python import data_parallel_model as caffe2_dpm
    assert caffe2_dpm is data_parallel_model


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
