"""Sparse (GradientSlice) gradients with Parallelize_GPU on several devices
of one process, checked without a GPU. As on CPU devices the table's
gradient is not summed: every device ends up with all devices' indices and
values, concatenated in device order, and its sparse update op applies
them. On GPUs device 0 Copies the other devices' slices in, Concats, and
Copies the result to every device (only Copy crosses devices). Checked by a
symbolic run (listed and random dag orders), and numerically by running the
same GPU graph retargeted to CPU devices against a numpy reference."""
import collections
import sys

import numpy as np
import pytest

from doppio import brew, core, data_parallel_model, model_helper, optimizer, workspace

from gpu_graph_checks import (check_placement, device_of, missing_kernels, random_orders,
                              retarget_to_cpu, run_shards, strip)

VOCAB, DIM, CLASSES, BATCH, STEPS = 12, 3, 4, 8, 6
PARAMS = ['table', 'fc_w', 'fc_b']
SLICE = ('table_grad_indices_all_devices', 'table_grad_values_all_devices')
# Ops of these graphs without a CUDA kernel so far (operators/*_gpu.*): the
# pass adds only Copy and Concat; the model brings Gather and the update.
KNOWN_GAPS = {('Concat', 'CUDA', ''), ('Gather', 'CUDA', ''),
              ('SparseMomentumSGDUpdate', 'CUDA', '')}


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def forward(model, loss_scale):
    table = model.create_param('table', [VOCAB, DIM], model_helper.Initializer('XavierFill'))
    rows = model.net.Gather([table, 'ids'], 'rows')
    logits = brew.fc(model, rows, 'fc', DIM, CLASSES)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def parallelize(devices, use_nccl=False, lr=0.3, momentum=0.0, **kwargs):
    model = model_helper.ModelHelper(name='gpu_sparse')
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, lr, momentum=momentum),
        devices=devices, use_nccl=use_nccl, **kwargs)
    return model


@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2, 3], [3, 5, 6]])
@pytest.mark.parametrize('use_nccl', [True, False])
def test_every_device_applies_every_slice(devices, use_nccl):
    model = parallelize(devices, use_nccl, momentum=0.9)
    net = model.net.Proto()
    check_placement(net, devices, model._shared_blobs)
    for op in net.op:
        if op.type in ('Sum', 'NCCLAllreduce', 'NCCLReduce', 'Allreduce'):
            assert not [b for b in op.input if 'table' in b or 'ids' in b or 'rows' in b], op
    for d in devices:
        grad = model.param_to_grad[core.BlobReference('gpu_{}/table'.format(d))]
        assert isinstance(grad, core.GradientSlice)
        assert (str(grad.indices), str(grad.values)) == tuple(
            'gpu_{}/{}'.format(d, name) for name in SLICE)
    concats = [op for op in net.op if op.type == 'Concat']
    assert len(concats) == 2 and all(op.device_option.cuda_gpu_id == devices[0]
                                     for op in concats)
    assert set(missing_kernels(net)) <= KNOWN_GAPS

    def local(shard, op, blob):
        return collections.Counter({(device_of(blob), strip(blob)): 1})

    every_slice = (tuple(('ids', d) for d in devices),
                   tuple(collections.Counter({(d, 'rows_grad'): 1}) for d in devices))
    for rng in [None] + random_orders(3):
        state = {'gpu_{}/ids'.format(d): ('ids', d) for d in devices}
        reads = run_shards([net], [state], local, rng)[0]
        updates = [(op, seen) for _, op, seen in reads if op.type == 'SparseMomentumSGDUpdate']
        assert sorted(device_of(op.input[3]) for op, _ in updates) == sorted(devices)
        for op, seen in updates:
            device = device_of(op.input[3])
            indices, values = ['gpu_{}/{}'.format(device, name) for name in SLICE]
            assert (op.input[4], op.input[0]) == (indices, values), op
            assert (seen[indices], seen[values]) == every_slice, (device, seen)
        dense = [(op, seen) for _, op, seen in reads if op.type == 'MomentumSGDUpdate']
        for op, seen in dense:
            assert seen[op.input[0]] == collections.Counter(
                {(d, strip(op.input[0])): 1 for d in devices}), op


def initial_params():
    rng = np.random.RandomState(4)
    return {'table': rng.randn(VOCAB, DIM).astype(np.float32),
            'fc_w': (rng.randn(CLASSES, DIM) * 0.5).astype(np.float32),
            'fc_b': (rng.randn(CLASSES) * 0.1).astype(np.float32)}


def batches():
    rng = np.random.RandomState(9)
    # Ids from 7 of the 12 rows: repeats within and across the devices.
    return [(rng.randint(0, 7, size=BATCH).astype(np.int32),
             rng.randint(0, CLASSES, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


def numpy_sgd(lr):
    """Whole-batch plain SGD; a row's gradient adds every occurrence."""
    params = {k: v.astype(np.float64) for k, v in initial_params().items()}
    for ids, labels in batches():
        rows = params['table'][ids]
        logits = rows @ params['fc_w'].T + params['fc_b']
        prob = np.exp(logits - logits.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        prob[np.arange(BATCH), labels] -= 1
        dlogits = prob / BATCH
        table_grad = np.zeros_like(params['table'])
        np.add.at(table_grad, ids, dlogits @ params['fc_w'])
        params['fc_w'] -= lr * (dlogits.T @ rows)
        params['fc_b'] -= lr * dlogits.sum(axis=0)
        params['table'] -= lr * table_grad
    return params


@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2, 3]])
def test_the_gpu_graph_retargeted_to_cpu_trains_like_numpy(devices):
    """The GPU graph's arithmetic (tree sums, gathers, in-place sparse
    updates) run on CPU devices with the same ids and op order."""
    model = parallelize(devices, lr=0.3)
    workspace.RunNetOnce(retarget_to_cpu(model.param_init_net.Proto()))
    for d in devices:
        for name, value in initial_params().items():
            workspace.FeedBlob('gpu_{}/{}'.format(d, name), value)
    train = retarget_to_cpu(model.net.Proto())
    per_device = BATCH // len(devices)
    for step, (ids, labels) in enumerate(batches()):
        for i, d in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('gpu_{}/ids'.format(d), ids[rows])
            workspace.FeedBlob('gpu_{}/label'.format(d), labels[rows])
        if step == 0:
            workspace.CreateNet(train, overwrite=True)
        workspace.RunNet(train.name)
    expected = numpy_sgd(0.3)
    for d in devices:
        for name in PARAMS:
            np.testing.assert_allclose(workspace.FetchBlob('gpu_{}/{}'.format(d, name)),
                                       expected[name], rtol=1e-4, atol=1e-5,
                                       err_msg='device {} {}'.format(d, name))
    assert not np.allclose(expected['table'], initial_params()['table'])


def test_one_device_keeps_its_own_slice():
    model = parallelize([2])
    assert not [op for op in model.net.Proto().op if op.type in ('Concat', 'Copy')]
    grad = model.param_to_grad[core.BlobReference('gpu_2/table')]
    assert (str(grad.indices), str(grad.values)) == ('gpu_2/ids', 'gpu_2/rows_grad')


def test_errors():
    with pytest.raises(NotImplementedError, match='sparse gradients across shards'):
        parallelize([0, 1], rendezvous=dict(kv_handler='store', shard_id=0, num_shards=2))

    def taken(model, loss_scale):
        losses = forward(model, loss_scale)
        model.net.Copy('rows', 'table_grad_values_all_devices_gpu1_copy')
        return losses

    with pytest.raises(RuntimeError, match=r"'table_grad_values_all_devices_gpu1_copy' "
                                           r"already exists.*parameter 'table'"):
        data_parallel_model.Parallelize_GPU(
            model_helper.ModelHelper(name='taken'), lambda m: None, taken,
            optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1), devices=[0, 1])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
