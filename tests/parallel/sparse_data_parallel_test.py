"""Sparse (GradientSlice) gradients in doppio.data_parallel_model on CPU
devices: an embedding table read with Gather trains to the same values on 1,
2 and 4 devices (momentum SGD, plain SGD, Adagrad) for the same global batch
whose ids repeat within and across the devices' slices; plain sparse SGD
matches a numpy reference that accumulates repeated rows; and the net
concatenates every device's slice on each device."""
import sys

import numpy as np
import pytest

from doppio import brew, core, data_parallel_model, model_helper, optimizer, workspace

VOCAB, DIM, CLASSES, BATCH, STEPS = 10, 4, 3, 8, 10
PARAMS = ['emb', 'fc_w', 'fc_b']


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def initial_params():
    rng = np.random.RandomState(5)
    return {
        'emb': rng.randn(VOCAB, DIM).astype(np.float32),
        'fc_w': rng.randn(CLASSES, DIM).astype(np.float32) * 0.5,
        'fc_b': rng.randn(CLASSES).astype(np.float32) * 0.1,
    }


def batches():
    rng = np.random.RandomState(11)
    # Ids drawn from 6 of the 10 rows: repeats within and across device
    # slices, and rows no device touches (which must stay unchanged).
    return [(rng.randint(0, 6, size=BATCH).astype(np.int32),
             rng.randint(0, CLASSES, size=BATCH).astype(np.int32)) for _ in range(STEPS)]


def test_ids_overlap_across_devices():
    # Guards the premise of the other tests.
    overlaps = [set(ids[:BATCH // 2]) & set(ids[BATCH // 2:]) for ids, _ in batches()]
    assert sum(1 for o in overlaps if o) >= STEPS // 2


def forward(model, loss_scale):
    table = model.create_param('emb', [VOCAB, DIM], model_helper.Initializer('XavierFill'))
    rows = model.net.Gather([table, 'ids'], 'rows')
    logits = brew.fc(model, rows, 'fc', DIM, CLASSES)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def train(num_devices, build_optimizer, steps=STEPS):
    """Device 0's params after training on `num_devices` CPU devices, each
    fed its rows of every batch; all devices must hold identical params."""
    model = model_helper.ModelHelper(name='sparse_dp_{}'.format(num_devices))
    devices = list(range(num_devices))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=build_optimizer, devices=devices, num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = BATCH // num_devices
    for ids, labels in batches()[:steps]:
        for device in devices:
            rows = slice(device * per_device, (device + 1) * per_device)
            workspace.FeedBlob('cpu_{}/ids'.format(device), ids[rows])
            workspace.FeedBlob('cpu_{}/label'.format(device), labels[rows])
        data_parallel_model.RunNet(model, 1)
    result = {p: workspace.FetchBlob('cpu_0/' + p) for p in PARAMS}
    for device in devices[1:]:
        for p in PARAMS:
            np.testing.assert_array_equal(workspace.FetchBlob('cpu_{}/{}'.format(device, p)),
                                          result[p], err_msg='device {} {}'.format(device, p))
    return model, result


OPTIMIZERS = {
    'momentum_sgd': lambda m: optimizer.build_sgd(m, 0.2, momentum=0.9),
    'plain_sgd': lambda m: optimizer.build_sgd(m, 0.2),
    'adagrad': lambda m: optimizer.build_adagrad(m, 0.3),
}


@pytest.mark.parametrize('name', sorted(OPTIMIZERS))
def test_same_params_on_1_2_4_devices(name):
    _, one = train(1, OPTIMIZERS[name])
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    _, two = train(2, OPTIMIZERS[name])
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    _, four = train(4, OPTIMIZERS[name])
    touched = sorted(set(np.concatenate([ids for ids, _ in batches()])))
    untouched = [r for r in range(VOCAB) if r not in touched]
    initial = initial_params()
    assert not np.allclose(one['emb'][touched], initial['emb'][touched])  # it trained
    np.testing.assert_array_equal(one['emb'][untouched], initial['emb'][untouched])
    for p in PARAMS:
        np.testing.assert_allclose(two[p], one[p], rtol=1e-5, atol=1e-6, err_msg=p)
        np.testing.assert_allclose(four[p], one[p], rtol=1e-5, atol=1e-6, err_msg=p)


def numpy_plain_sgd(lr):
    """Whole-batch SGD written independently: the table's gradient adds up
    the output gradient of every occurrence of a row (np.add.at)."""
    params = {k: v.astype(np.float64) for k, v in initial_params().items()}
    for ids, labels in batches():
        rows = params['emb'][ids]
        logits = rows @ params['fc_w'].T + params['fc_b']
        shifted = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        dlogits = prob.copy()
        dlogits[np.arange(BATCH), labels] -= 1
        dlogits /= BATCH
        drows = dlogits @ params['fc_w']
        params['fc_w'] -= lr * (dlogits.T @ rows)
        params['fc_b'] -= lr * dlogits.sum(axis=0)
        demb = np.zeros_like(params['emb'])
        np.add.at(demb, ids, drows)
        params['emb'] -= lr * demb
    return params


def test_plain_sparse_sgd_on_2_devices_matches_numpy():
    _, result = train(2, OPTIMIZERS['plain_sgd'])
    expected = numpy_plain_sgd(0.2)
    for p in PARAMS:
        np.testing.assert_allclose(result[p], expected[p], rtol=1e-4, atol=1e-5, err_msg=p)


def test_each_device_concatenates_every_slice():
    model, _ = train(2, OPTIMIZERS['momentum_sgd'], steps=1)
    ops = model.net.Proto().op
    for op in ops:
        assert not (op.type == 'Allreduce' and 'emb' in op.input[0]), op
    for device in (0, 1):
        prefix = 'cpu_{}/'.format(device)
        concats = {op.output[0]: list(op.input) for op in ops
                   if op.type == 'Concat' and op.output[0].startswith(prefix + 'emb_grad')}
        assert concats == {
            prefix + 'emb_grad_indices_all_devices': ['cpu_0/ids', 'cpu_1/ids'],
            prefix + 'emb_grad_values_all_devices': ['cpu_0/rows_grad', 'cpu_1/rows_grad'],
        }
        update = [op for op in ops if op.type == 'SparseMomentumSGDUpdate'
                  and op.input[3] == prefix + 'emb']
        assert len(update) == 1
        assert update[0].input[0] == prefix + 'emb_grad_values_all_devices'
        assert update[0].input[4] == prefix + 'emb_grad_indices_all_devices'
        grad = model.param_to_grad[core.BlobReference(prefix + 'emb')]
        assert isinstance(grad, core.GradientSlice)
        assert (str(grad.indices), str(grad.values)) == (
            prefix + 'emb_grad_indices_all_devices', prefix + 'emb_grad_values_all_devices')
    # Every device applies all BATCH rows of the step.
    for device in (0, 1):
        np.testing.assert_array_equal(
            workspace.FetchBlob('cpu_{}/emb_grad_indices_all_devices'.format(device)),
            batches()[0][0])


def test_single_device_keeps_its_own_slice():
    model, _ = train(1, OPTIMIZERS['adagrad'], steps=1)
    assert not [op for op in model.net.Proto().op if op.type == 'Concat']
    grad = model.param_to_grad[core.BlobReference('cpu_0/emb')]
    assert (str(grad.indices), str(grad.values)) == ('cpu_0/ids', 'cpu_0/rows_grad')


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
