"""The parts of Caffe2's data_parallel_model surface that its scripts use
beyond training itself (resnet50_trainer.py calls each of them):
post_sync_builder_fun, model._device_prefix, OptimizeGradientMemory,
stripBlobName, GetLearningRateBlobNames and data_parallel_model_utils."""
import os
import sys

import numpy as np
import pytest

from caffe2.proto import caffe2_pb2
from caffe2.python import (core, data_parallel_model, data_parallel_model_utils,
                           model_helper, optimizer, workspace)

from mlp_fixture import (BATCH, PARAMS, batches, forward, fresh_workspace,  # noqa: F401
                         initial_params)


def _parallelize(name, devices=(0, 1), **kwargs):
    model = model_helper.ModelHelper(name=name)
    kwargs.setdefault('num_threads_per_device', 1)
    data_parallel_model.Parallelize(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=list(devices), cpu_device=True, **kwargs)
    return model


def _train(model, steps=4):
    data_parallel_model.RunInitNet(model)
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    half = BATCH // 2
    for x, y in batches()[:steps]:
        for device in (0, 1):
            rows = slice(device * half, (device + 1) * half)
            workspace.FeedBlob('cpu_{}/data'.format(device), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), y[rows])
        data_parallel_model.RunNet(model, 1)
    return {p: workspace.FetchBlob('cpu_0/' + p) for p in PARAMS}


def test_caffe2s_default_threads_never_outnumber_the_cores():
    """num_threads_per_device=4 (Caffe2's default) on 2 CPU devices: each
    device's pool gets at most its share of the cores, the execution plan
    says so, and training gives the same parameters as 1 thread."""
    cores = len(os.sched_getaffinity(0))
    model = _parallelize('default_threads', num_threads_per_device=4)
    plan = data_parallel_model.ExecutionPlan(model)
    assert plan['devices'] == ['cpu_0', 'cpu_1']
    assert plan['requested_workers'] == 4
    assert plan['workers'] == [max(1, min(4, cores // 2))] * 2
    assert 'capped to {} core'.format(cores) in plan['text']
    four = _train(model)
    workspace.ResetWorkspace()
    one = _train(_parallelize('one_thread'))
    for name in PARAMS:
        np.testing.assert_allclose(four[name], one[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_device_prefix_is_caffe2s():
    model = _parallelize('prefix')
    assert model._device_prefix == 'cpu'
    assert model._devices == [0, 1]
    # What Caffe2 scripts build from it.
    name = '{}_{}/fc1_w'.format(model._device_prefix, model._devices[0])
    assert name in [str(p) for p in model.params]


def test_post_sync_builder_runs_per_device_after_the_sync():
    seen = []

    def post_sync(model):
        seen.append((core.ScopedName('w'), core.scope.CurrentDeviceScope().cuda_gpu_id))
        model.param_init_net.Scale('fc1_w', 'fc1_w_doubled', scale=2.0)

    model = _parallelize('post_sync', post_sync_builder_fun=post_sync)
    assert seen == [('cpu_0/w', 0), ('cpu_1/w', 1)]
    ops = model.param_init_net.Proto().op
    last_broadcast = max(i for i, op in enumerate(ops) if op.type == 'Broadcast')
    scales = [(i, op) for i, op in enumerate(ops) if op.type == 'Scale']
    assert [list(op.output) for _, op in scales] == [['cpu_0/fc1_w_doubled'],
                                                      ['cpu_1/fc1_w_doubled']]
    assert all(i > last_broadcast for i, _ in scales)
    assert [op.device_option.cuda_gpu_id for _, op in scales] == [0, 1]
    workspace.RunNetOnce(model.param_init_net)
    # Device 1's copy is made from the broadcast parameter (device 0's).
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/fc1_w_doubled'),
                                  2 * workspace.FetchBlob('cpu_0/fc1_w'))


def test_optimize_gradient_memory_shares_blobs_without_changing_results():
    plain = _train(_parallelize('plain_memory'))
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = _parallelize('shared_memory')
    before = set(b for op in model.net.Proto().op for b in list(op.input) + list(op.output))
    data_parallel_model.OptimizeGradientMemory(model, {}, set(), False)
    after = set(b for op in model.net.Proto().op for b in list(op.input) + list(op.output))
    assert len(after) < len(before)
    assert any('__m' in b and b.startswith('cpu_1/') for b in after)
    shared = _train(model)
    for p in PARAMS:
        np.testing.assert_array_equal(shared[p], plain[p], err_msg=p)


def test_optimize_gradient_memory_keeps_excluded_blobs():
    model = _parallelize('excluded')
    data_parallel_model.OptimizeGradientMemory(model, {}, {'relu1_grad'}, False)
    names = set(b for op in model.net.Proto().op for b in op.output)
    assert {'cpu_0/relu1_grad', 'cpu_1/relu1_grad'} <= names


def test_learning_rate_blob_names_and_strip():
    model = _parallelize('lr_names')
    names = data_parallel_model.GetLearningRateBlobNames(model)
    assert len(names) == 1
    _train(model, steps=1)
    # Momentum SGD's learning rate blob holds the (positive) step size.
    np.testing.assert_allclose(workspace.FetchBlob(names[0]), [0.1])
    assert data_parallel_model.stripBlobName('gpu_0/fc1_w') == 'fc1_w'
    assert data_parallel_model.stripBlobName(core.BlobReference('cpu_3/a/b')) == 'a/b'
    assert data_parallel_model.stripBlobName(core.GradientSlice(
        core.BlobReference('cpu_0/i'), core.BlobReference('cpu_0/v'))) == 'i:v'


def test_activation_blobs_of_device_0():
    model = _parallelize('activations')
    activations = data_parallel_model_utils.GetActivationBlobs(model)
    assert {'fc1', 'relu1', 'fc2'} <= set(activations)
    assert not set(activations) & set(PARAMS + ['data', 'label'])
    assert not any(a.endswith('_grad') or a.startswith('cpu_') for a in activations)
    # The order is the net's.
    assert activations.index('fc1') < activations.index('relu1') < activations.index('fc2')


def test_shift_activation_devices_refuses_chained_shifts():
    model = _parallelize('shift')
    with pytest.raises(ValueError, match='both a source and a target'):
        data_parallel_model_utils.ShiftActivationDevices(model, ['fc1'], {0: 1, 1: 2})


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
