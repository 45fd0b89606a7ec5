"""The memonger options of Parallelize_GPU, checked without a GPU.
optimize_gradient_memory renames blobs of the GPU net so that some share
one name: the graph keeps its dependencies and in-place pairs (memonger's
verify helpers), no param, param gradient, loss, blobs_to_keep entry,
external blob or collective operand is renamed, and a shared name only
ever stands for blobs of one device (its gpu_N/ namescope) and is touched
only by that device's ops. dynamic_memory_management only adds Free ops,
each after the last use of a blob the net makes, never of params, kept
blobs or (with a rendezvous) param gradients. Retargeted to CPU devices,
the optimized GPU graph trains to exactly the params of the plain one."""
import collections
import os
import re
import sys

import numpy as np
import pytest

from doppio import core, data_parallel_model, memonger, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2
from python_api.examples import fmnist_train

from gpu_graph_checks import (NCCL_OPS, check_placement, device_of, is_shard_collective,
                              retarget_to_cpu)
from mlp_fixture import PARAMS, batches, forward, initial_params

SHARED_NAME = re.compile(r'^gpu_(\d+)/__m\d+_shared$')
KEEP = ['softmax']


def reference_cnn(model, loss_scale):
    softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


MODELS = {'mlp': forward, 'cnn': reference_cnn}
RENDEZVOUS = dict(kv_handler='store_handler', shard_id=1, num_shards=2)


def build(forward_fun, devices, use_nccl, rendezvous=None, **options):
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='gpu_memonger')
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward_fun,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.05, momentum=0.9),
        devices=devices, use_nccl=use_nccl, rendezvous=rendezvous, blobs_to_keep=KEEP,
        **options)
    return model


def protected_blobs(model, devices):
    """What memonger must leave alone, every device's copy."""
    names = set()
    for template in (model._param_names + model._computed_param_names + model._grad_names +
                     KEEP + ['scaled_loss']):
        names.update('gpu_{}/{}'.format(d, template) for d in devices)
    net = model.net.Proto()
    names.update(net.external_input)
    names.update(net.external_output)
    for op in net.op:
        if op.type in NCCL_OPS or is_shard_collective(op) or op.type == 'Copy':
            names.update(op.input)
            names.update(op.output)
    return names


def renames(plain, optimized):
    """{old name: new name} read op by op from two nets with the same ops."""
    assert len(plain.op) == len(optimized.op)
    mapping = {}
    for before, after in zip(plain.op, optimized.op):
        assert (before.type, before.device_option) == (after.type, after.device_option)
        for old_names, new_names in [(before.input, after.input), (before.output, after.output),
                                     (before.control_input, after.control_input)]:
            assert len(old_names) == len(new_names)
            for old, new in zip(old_names, new_names):
                if old != new:
                    assert mapping.setdefault(old, new) == new, (old, new)
    return mapping


@pytest.mark.parametrize('model_name', sorted(MODELS))
@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2, 3]])
@pytest.mark.parametrize('use_nccl', [True, False])
@pytest.mark.parametrize('rendezvous', [None, RENDEZVOUS], ids=['1_process', '2_shards'])
def test_gradient_sharing_stays_within_a_device(model_name, devices, use_nccl, rendezvous):
    plain = build(MODELS[model_name], devices, use_nccl, rendezvous)
    shared = build(MODELS[model_name], devices, use_nccl, rendezvous,
                   optimize_gradient_memory=True)
    before, after = plain.net.Proto(), shared.net.Proto()
    assert memonger.verify_graph_equality(before, after)
    assert memonger.verify_inplace_blobs(before, after)
    mapping = renames(before, after)
    assert mapping, 'nothing was shared'
    protected = protected_blobs(plain, devices)
    members = collections.defaultdict(set)
    for old, new in mapping.items():
        assert old not in protected, old
        match = SHARED_NAME.match(new)
        assert match and int(match.group(1)) == device_of(old.lstrip('_')), (old, new)
        members[new].add(device_of(old.lstrip('_')))
    assert all(len(devices_of_name) == 1 for devices_of_name in members.values())
    host = shared._shared_blobs | {'data_parallel_model_common_world'}
    check_placement(after, devices, host)
    for op in after.op:
        for blob in list(op.input) + list(op.output):
            if SHARED_NAME.match(blob):
                assert op.device_option.cuda_gpu_id == device_of(blob), (op.type, blob)


@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2]])
@pytest.mark.parametrize('rendezvous', [None, RENDEZVOUS], ids=['1_process', '2_shards'])
def test_dynamic_memory_management_only_adds_frees(devices, rendezvous):
    plain = build(reference_cnn, devices, True, rendezvous)
    freed = build(reference_cnn, devices, True, rendezvous, dynamic_memory_management=True)
    ops = list(freed.net.Proto().op)
    without_frees = [op for op in ops if op.type != 'Free']
    assert without_frees == list(plain.net.Proto().op)
    frees = [(i, op) for i, op in enumerate(ops) if op.type == 'Free']
    assert frees
    keep = set('gpu_{}/{}'.format(d, b) for d in devices
               for b in KEEP + plain._param_names + plain._computed_param_names)
    if rendezvous:
        keep.update('gpu_{}/{}'.format(d, g) for d in devices for g in plain._grad_names)
    keep.update(plain.net.Proto().external_output)
    for index, op in frees:
        assert list(op.input) == list(op.output), op
        for blob in op.input:
            assert blob not in keep, blob
            touched_later = [later for later in ops[index + 1:]
                             if blob in list(later.input) + list(later.output)]
            assert not touched_later, (blob, touched_later[0])
            assert any(blob in earlier.input for earlier in ops[:index])


def train_retargeted(model, devices, steps=4, on_cuda=False):
    """Params of every device after `steps` of the GPU graph, run on CPU
    devices (retargeted) or, on_cuda, as it is."""
    workspace.ResetWorkspace()
    retarget = (lambda net: net) if on_cuda else retarget_to_cpu
    workspace.RunNetOnce(retarget(model.param_init_net.Proto()))

    def feed(name, value, device):
        option = core.DeviceOption(doppio_pb2.CUDA, device) if on_cuda else None
        workspace.FeedBlob('gpu_{}/{}'.format(device, name), value, device_option=option)

    for d in devices:
        for name, value in initial_params().items():
            feed(name, value, d)
    train = retarget(model.net.Proto())
    per_device = len(batches()[0][0]) // len(devices)
    for step, (x, y) in enumerate(batches()[:steps]):
        for i, d in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            feed('data', x[rows], d)
            feed('label', y[rows], d)
        if step == 0:
            workspace.CreateNet(train, overwrite=True)
        workspace.RunNet(train.name)
    return {(d, p): workspace.FetchBlob('gpu_{}/{}'.format(d, p)) for d in devices
            for p in PARAMS}


def test_optimized_gpu_graph_retargeted_to_cpu_trains_like_the_plain_one():
    devices = [0, 1]
    plain = train_retargeted(build(forward, devices, False), devices)
    both = train_retargeted(build(forward, devices, False, optimize_gradient_memory=True,
                                  dynamic_memory_management=True), devices)
    initial = initial_params()
    for key, value in plain.items():
        assert not np.allclose(value, initial[key[1]]), key  # it trained
        np.testing.assert_allclose(both[key], value, rtol=1e-6, atol=1e-7, err_msg=str(key))


def test_optimized_gpu_graph_trains_like_the_plain_one_on_cuda():
    """The same on a GPU (one device, so the shared names are what differs);
    skips without one, fails then under DOPPIO_REQUIRE_GPU=1."""
    if workspace.NumCudaDevices() == 0:
        if os.environ.get('DOPPIO_REQUIRE_GPU', '') not in ('', '0', 'false', 'off'):
            pytest.fail('DOPPIO_REQUIRE_GPU is set but no GPU is usable: {}'.format(
                workspace.C.cuda_unavailable_reason()))
        pytest.skip('no usable GPU: {}'.format(workspace.C.cuda_unavailable_reason()))
    plain = train_retargeted(build(forward, [0], True), [0], on_cuda=True)
    shared = build(forward, [0], True, optimize_gradient_memory=True)
    assert renames(build(forward, [0], True).net.Proto(), shared.net.Proto())
    optimized = train_retargeted(shared, [0], on_cuda=True)
    for key, value in plain.items():
        assert not np.allclose(value, initial_params()[key[1]]), key
        np.testing.assert_allclose(optimized[key], value, rtol=1e-6, atol=1e-7,
                                   err_msg=str(key))


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
