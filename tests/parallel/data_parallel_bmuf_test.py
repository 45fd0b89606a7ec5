"""Caffe2's Parallelize_BMUF (block-wise model-update filtering, issue 26)
on two CPU devices against a numpy BMUF: every device runs plain SGD on its
own batches (loss scaled by 1 / devices, as Caffe2 does) for a block of
iterations, then the block update averages the params and filters the
change with the block momentum (plain and Nesterov); RunWarmup hands the
master's params to every device; no gradient is reduced between devices."""
import sys

import numpy as np
import pytest

from doppio import data_parallel_model, model_helper, optimizer, workspace

import mlp_reference
from mlp_fixture import D_IN, D_OUT, PARAMS, forward, fresh_workspace  # noqa: F401

LR = 0.3
DEVICES = [0, 1]
BLOCK = 3
BLOCKS = 3
PER_DEVICE = 4


def block_batches():
    """Per block, per device: one (x, labels) batch, fed for the block."""
    rng = np.random.RandomState(5)
    return [[(rng.randn(PER_DEVICE, D_IN).astype(np.float32),
              rng.randint(0, D_OUT, size=PER_DEVICE).astype(np.int32)) for _ in DEVICES]
            for _ in range(BLOCKS)]


def build(name, **kwargs):
    model = model_helper.ModelHelper(name=name)
    data_parallel_model.Parallelize_CPU_BMUF(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        param_update_builder_fun=lambda m: optimizer.build_sgd(m, LR), devices=DEVICES,
        **kwargs)
    data_parallel_model.RunInitNet(model)
    return model


def device_params(device):
    return {p: workspace.FetchBlob('cpu_%d/%s' % (device, p)).astype(np.float64)
            for p in PARAMS}


def feed(batches):
    for d, (x, y) in zip(DEVICES, batches):
        workspace.FeedBlob('cpu_%d/data' % d, x)
        workspace.FeedBlob('cpu_%d/label' % d, y)


def numpy_bmuf(initial, blocks, block_lr, block_momentum, nesterov):
    """The reference: local SGD per device (lr scaled by the loss scale),
    then Chen and Huo's filtered block update."""
    scale = 1.0 / len(DEVICES)
    global_model = {p: initial[p].copy() for p in PARAMS}
    v = {p: np.zeros_like(initial[p]) for p in PARAMS}
    v_prev = {p: np.zeros_like(initial[p]) for p in PARAMS}
    for batches in blocks:
        local = [mlp_reference.numpy_sgd(global_model, [batch] * BLOCK, LR * scale)
                 for batch in batches]
        for p in PARAMS:
            average = sum(params[p] for params in local) / len(local)
            v[p] = block_momentum * v[p] + block_lr * (average - global_model[p])
            if nesterov:
                global_model[p] = global_model[p] + v[p] - block_momentum * (v[p] - v_prev[p])
                v_prev[p] = v[p].copy()
            else:
                global_model[p] = global_model[p] + v[p]
    return global_model


@pytest.mark.parametrize('options, block_lr, block_momentum', [
    (dict(), 1.0, 0.5),  # Caffe2's defaults: momentum 1 - 1 / devices
    (dict(block_learning_rate=0.7, block_momentum=0.3), 0.7, 0.3),
    (dict(block_momentum=0.6, nesterov=True), 1.0, 0.6),
])
def test_blocks_match_numpy_bmuf(options, block_lr, block_momentum):
    model = build('bmuf', **options)
    initial = device_params(0)
    np.testing.assert_array_equal(device_params(1)['fc1_w'], initial['fc1_w'])
    blocks = block_batches()
    for batches in blocks:
        feed(batches)
        data_parallel_model.RunNet(model, BLOCK)
    expected = numpy_bmuf(initial, blocks, block_lr, block_momentum,
                          options.get('nesterov', False))
    for d in DEVICES:
        actual = device_params(d)
        for p in PARAMS:
            np.testing.assert_allclose(actual[p], expected[p], rtol=1e-4, atol=1e-5,
                                       err_msg='cpu_%d/%s' % (d, p))
    # The check can fail: plain model averaging (no momentum) ends elsewhere.
    averaged = numpy_bmuf(initial, blocks, 1.0, 0.0, False)
    assert max(np.abs(averaged[p] - expected[p]).max() for p in PARAMS) > 1e-3
    # Local steps only: no op sums anything between the devices.
    assert not [op for op in model.net.Proto().op if op.type == 'Allreduce']
    assert 'local updates' in str(model._parallel_plan)


def test_warmup_hands_the_masters_params_to_every_device():
    model = build('bmuf_warmup', warmup_iterations=2, master_device=1)
    initial = device_params(1)
    batches = block_batches()[0]
    feed(batches)
    data_parallel_model.RunWarmup(model)
    # Device 1 (the master) trained alone on its batch; everyone has its params.
    expected = mlp_reference.numpy_sgd(initial, [batches[1]] * 2, LR / len(DEVICES))
    for d in DEVICES:
        actual = device_params(d)
        for p in PARAMS:
            np.testing.assert_allclose(actual[p], expected[p], rtol=1e-4, atol=1e-5,
                                       err_msg='cpu_%d/%s' % (d, p))
    # ... and the global model starts there.
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_1/fc1_w_g'),
                                  workspace.FetchBlob('cpu_1/fc1_w'))


def test_reset_momentum_sgd_zeroes_the_local_momentum():
    model = model_helper.ModelHelper(name='bmuf_momentum')
    data_parallel_model.Parallelize_CPU_BMUF(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        param_update_builder_fun=lambda m: optimizer.build_sgd(m, LR, momentum=0.9),
        devices=DEVICES, reset_momentum_sgd=True)
    data_parallel_model.RunInitNet(model)
    feed(block_batches()[0])
    momentum = [op.input[1] for op in model.net.Proto().op if op.type == 'MomentumSGDUpdate']
    assert len(momentum) == len(PARAMS) * len(DEVICES)
    workspace.RunNet(model.net.Proto().name, 2)
    assert all(np.abs(workspace.FetchBlob(m)).max() > 0 for m in momentum)
    workspace.RunNet(model._global_model_param_updates_net.Proto().name)
    assert all(np.abs(workspace.FetchBlob(m)).max() == 0 for m in momentum)


@pytest.mark.parametrize('use_nccl, types', [(True, ['NCCLReduce']), (False, ['Copy', 'Sum'])])
def test_gpu_block_sums_are_the_passs_reductions(use_nccl, types):
    """On GPUs the block update sums the params with the pass's own
    reductions (parallel/device_collectives.h): NCCLReduce with use_nccl,
    else Copy + Sum into the first device; graph only, no GPU needed."""
    from doppio.proto import doppio_pb2
    net = doppio_pb2.NetDef()
    net.ParseFromString(workspace.C.device_reduce_to_first(doppio_pb2.CUDA, [1, 0], use_nccl,
                                                           ['w']))
    ops = list(net.op)
    assert [op.type for op in ops] == types
    assert sorted(net.external_input) == ['gpu_0/w', 'gpu_1/w']
    assert ops[-1].output[0] == 'gpu_1/w'  # the first device (the master) gets the sum
    assert all(op.device_option.cuda_gpu_id == 1 for op in ops)


def test_bad_master_device_is_refused():
    model = model_helper.ModelHelper(name='bmuf_bad')
    with pytest.raises(ValueError, match='master_device 5 is not one of the devices'):
        data_parallel_model.Parallelize_CPU_BMUF(
            model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
            param_update_builder_fun=lambda m: optimizer.build_sgd(m, LR), devices=DEVICES,
            master_device=5)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
