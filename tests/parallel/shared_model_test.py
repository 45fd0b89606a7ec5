"""data_parallel_model.Parallelize(shared_model=True) on CPU devices: every
device reads the master's (cpu_0/) params, gradients are allreduced, the
updates run once. An MLP trained 10 momentum SGD steps on a global batch of
8 split over 2 and 4 devices ends with the params of 1 device on the whole
batch and of shared_model=False; the net reads only cpu_0/ params and has one
update per param; a CNN with SpatialBN keeps its running statistics per
device; a sparse embedding model matches its replicated twin. Also: a
failing Parallelize leaves the model exactly as it was."""
import sys

import numpy as np
import pytest

from doppio import brew, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

BATCH, STEPS = 8, 10
D_IN, HIDDEN, D_OUT = 5, 7, 3
MLP_PARAMS = ['fc1_w', 'fc1_b', 'fc2_w', 'fc2_b']
CHANNELS, SIDE, CLASSES = 4, 8, 3
FC_IN = CHANNELS * (SIDE // 2) * (SIDE // 2)
CNN_PARAMS = ['conv_w', 'conv_b', 'bn_s', 'bn_b', 'fc_w', 'fc_b']
RUNNING = ['bn_rm', 'bn_riv']
VOCAB, DIM = 10, 4
SPARSE_PARAMS = ['emb', 'fc_w', 'fc_b']


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def mlp(model, loss_scale):
    hidden = brew.relu(model, brew.fc(model, 'data', 'fc1', D_IN, HIDDEN), 'relu1')
    logits = brew.fc(model, hidden, 'fc2', HIDDEN, D_OUT)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def mlp_setup():
    rng = np.random.RandomState(3)
    params = {
        'fc1_w': rng.randn(HIDDEN, D_IN).astype(np.float32) * 0.5,
        'fc1_b': rng.randn(HIDDEN).astype(np.float32) * 0.1,
        'fc2_w': rng.randn(D_OUT, HIDDEN).astype(np.float32) * 0.5,
        'fc2_b': rng.randn(D_OUT).astype(np.float32) * 0.1,
    }
    rng = np.random.RandomState(7)
    data = [{'data': rng.randn(BATCH, D_IN).astype(np.float32),
             'label': rng.randint(0, D_OUT, size=BATCH).astype(np.int32)}
            for _ in range(STEPS)]
    return params, data


def cnn(model, loss_scale):
    conv = brew.conv(model, 'data', 'conv', 1, CHANNELS, 3, pad=1)
    normalized = brew.spatial_bn(model, conv, 'bn', CHANNELS, momentum=0.9)
    hidden = brew.relu(model, normalized, 'relu')
    pooled = brew.max_pool(model, hidden, 'pool', kernel=2, stride=2)
    logits = brew.fc(model, pooled, 'fc', FC_IN, CLASSES)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def cnn_setup():
    rng = np.random.RandomState(11)
    params = {
        'conv_w': rng.randn(CHANNELS, 1, 3, 3).astype(np.float32) * 0.5,
        'conv_b': rng.randn(CHANNELS).astype(np.float32) * 0.1,
        'bn_s': rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32),
        'bn_b': rng.randn(CHANNELS).astype(np.float32) * 0.1,
        'fc_w': rng.randn(CLASSES, FC_IN).astype(np.float32) * 0.2,
        'fc_b': rng.randn(CLASSES).astype(np.float32) * 0.1,
    }
    rng = np.random.RandomState(5)
    data = [{'data': (rng.randn(BATCH, 1, SIDE, SIDE) * 2 + 0.5).astype(np.float32),
             'label': rng.randint(0, CLASSES, size=BATCH).astype(np.int32)}
            for _ in range(STEPS)]
    return params, data


def embedding(model, loss_scale):
    table = model.create_param('emb', [VOCAB, DIM], model_helper.Initializer('XavierFill'))
    rows = model.net.Gather([table, 'ids'], 'rows')
    logits = brew.fc(model, rows, 'fc', DIM, CLASSES)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def embedding_setup():
    rng = np.random.RandomState(5)
    params = {
        'emb': rng.randn(VOCAB, DIM).astype(np.float32),
        'fc_w': rng.randn(CLASSES, DIM).astype(np.float32) * 0.5,
        'fc_b': rng.randn(CLASSES).astype(np.float32) * 0.1,
    }
    rng = np.random.RandomState(11)
    # Ids from 6 of 10 rows: repeated within and across the devices' slices.
    data = [{'ids': rng.randint(0, 6, size=BATCH).astype(np.int32),
             'label': rng.randint(0, CLASSES, size=BATCH).astype(np.int32)}
            for _ in range(STEPS)]
    return params, data


def train(forward, setup, names, num_devices, shared, steps=STEPS):
    """Trains momentum SGD with each device fed its rows of every batch;
    returns (model, {name: device 0's value})."""
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='shared_{}_{}'.format(num_devices, int(shared)))
    devices = list(range(num_devices))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=devices, num_threads_per_device=1, shared_model=shared)
    data_parallel_model.RunInitNet(model)
    initial, data = setup()
    for name, value in initial.items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = BATCH // num_devices
    for batch in data[:steps]:
        for i, device in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            for name, value in batch.items():
                workspace.FeedBlob('cpu_{}/{}'.format(device, name), value[rows])
        data_parallel_model.RunNet(model, 1)
    return model, {n: workspace.FetchBlob('cpu_0/' + n) for n in names}


def assert_close(actual, expected, names):
    for name in names:
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_mlp_shared_model_matches_one_device_and_replicas():
    _, one = train(mlp, mlp_setup, MLP_PARAMS, 1, shared=False)
    initial, _ = mlp_setup()
    for name in MLP_PARAMS:
        assert not np.allclose(one[name], initial[name]), name  # it trained
    for devices in (2, 4):
        _, shared = train(mlp, mlp_setup, MLP_PARAMS, devices, shared=True)
        _, replicated = train(mlp, mlp_setup, MLP_PARAMS, devices, shared=False)
        assert_close(shared, one, MLP_PARAMS)
        assert_close(shared, replicated, MLP_PARAMS)


def test_mlp_shared_model_structure_and_bookkeeping():
    model, _ = train(mlp, mlp_setup, MLP_PARAMS, 2, shared=True, steps=1)
    blobs = set(workspace.Blobs())
    for name in MLP_PARAMS:
        assert 'cpu_0/' + name in blobs
        assert 'cpu_1/' + name not in blobs, name
        assert 'cpu_1/{}_momentum'.format(name) not in blobs, name
        # Each device still computes its own gradient.
        assert 'cpu_1/{}_grad'.format(name) in blobs, name
    ops = model.net.Proto().op
    # FC and FCGradient read (X, W, ...): every device's W is the master's.
    fcs = [op for op in ops if op.type in ('FC', 'FCGradient')]
    assert len(fcs) == 8
    for op in fcs:
        layer = 'fc1' if op.input[0].endswith('/data') or 'fc1' in op.output[0] else 'fc2'
        assert op.input[1] == 'cpu_0/{}_w'.format(layer), op
    device1_fcs = [op for op in fcs if op.device_option.cuda_gpu_id == 1]
    assert len(device1_fcs) == 4
    assert all(op.input[0].startswith('cpu_1/') for op in device1_fcs)
    updates = [op for op in ops if op.type == 'MomentumSGDUpdate']
    assert sorted(op.input[3] for op in updates) == sorted('cpu_0/' + p for p in MLP_PARAMS)
    assert sorted(list(op.input) for op in ops if op.type == 'Allreduce') == sorted(
        ['cpu_0/{}_grad'.format(p), 'cpu_1/{}_grad'.format(p)] for p in MLP_PARAMS)
    init_ops = model.param_init_net.Proto().op
    assert not [op for op in init_ops if op.type == 'Broadcast']
    assert not [o for op in init_ops for o in op.output if o.startswith('cpu_1/')]
    assert [str(p) for p in model.params] == ['cpu_0/' + p for p in MLP_PARAMS]
    assert sorted(str(p) for p in model.param_to_grad) == sorted('cpu_0/' + p
                                                                 for p in MLP_PARAMS)
    assert [str(w) for w in model.weights] == ['cpu_0/fc1_w', 'cpu_0/fc2_w']
    assert [str(b) for b in model.biases] == ['cpu_0/fc1_b', 'cpu_0/fc2_b']
    checkpoint = set(str(b) for b in data_parallel_model.GetCheckpointParams(model))
    assert checkpoint == set(['cpu_0/' + p for p in MLP_PARAMS] +
                             ['cpu_0/{}_momentum'.format(p) for p in MLP_PARAMS] +
                             ['optimizer_iteration'])


def test_cnn_with_spatial_bn_keeps_running_stats_per_device():
    names = CNN_PARAMS + RUNNING
    model, shared = train(cnn, cnn_setup, names, 2, shared=True)
    shared_device1 = {n: workspace.FetchBlob('cpu_1/' + n) for n in RUNNING}
    assert 'cpu_1/bn_s' not in set(workspace.Blobs())
    broadcasts = sorted(op.input[0] for op in model.param_init_net.Proto().op
                        if op.type == 'Broadcast')
    assert broadcasts == ['cpu_0/bn_riv', 'cpu_0/bn_rm']
    _, replicated = train(cnn, cnn_setup, names, 2, shared=False)
    replicated_device1 = {n: workspace.FetchBlob('cpu_1/' + n) for n in RUNNING}
    assert_close(shared, replicated, names)
    assert_close(shared_device1, replicated_device1, RUNNING)
    # Each device's statistics are of its own half of the batch.
    assert not np.allclose(shared_device1['bn_rm'], shared['bn_rm'])


def test_sparse_embedding_shared_model_matches_replicas():
    model, shared = train(embedding, embedding_setup, SPARSE_PARAMS, 2, shared=True)
    ops = model.net.Proto().op
    gathers = [op for op in ops if op.type == 'Gather']
    assert sorted(op.input[0] for op in gathers) == ['cpu_0/emb', 'cpu_0/emb']
    # Only the master concatenates the slices, and applies them once.
    concat_outputs = sorted(op.output[0] for op in ops if op.type == 'Concat')
    assert concat_outputs == ['cpu_0/emb_grad_indices_all_devices',
                              'cpu_0/emb_grad_values_all_devices']
    assert 'cpu_1/emb' not in set(workspace.Blobs())
    _, replicated = train(embedding, embedding_setup, SPARSE_PARAMS, 2, shared=False)
    _, one = train(embedding, embedding_setup, SPARSE_PARAMS, 1, shared=False)
    assert_close(shared, replicated, SPARSE_PARAMS)
    assert_close(shared, one, SPARSE_PARAMS)


def test_shared_model_is_cpu_only():
    with pytest.raises(ValueError, match='shared_model is only supported on CPU'):
        data_parallel_model.Parallelize_GPU(
            model_helper.ModelHelper(name='shared_gpu'), lambda m: None, mlp,
            optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1), devices=[0],
            shared_model=True)


def snapshot(model):
    return (model.net.Proto().SerializeToString(),
            model.param_init_net.Proto().SerializeToString(),
            [str(p) for p in model.params], dict(model.param_to_grad),
            [str(w) for w in model.weights], [str(p) for p in model._computed_params],
            model.gradient_ops_added)


def test_failing_parallelize_leaves_the_model_as_it_was():
    model = model_helper.ModelHelper(name='atomic')
    # A blob made before Parallelize (shared by the devices).
    model.param_init_net.ConstantFill([], 'shared_scale', shape=[1], value=2.0)
    params_list = model.params
    before = snapshot(model)

    def no_such_loss(m, loss_scale):
        mlp(m, loss_scale)
        return ['not_a_blob_of_the_net']

    def input_as_loss(m, loss_scale):
        mlp(m, loss_scale)
        return ['data']

    attempts = [
        # Fails in the backward pass, after the builders changed the nets.
        (dict(forward_pass_builder_fun=no_such_loss, devices=[0, 1]),
         "loss blob 'not_a_blob_of_the_net'"),
        # Fails in the C++ pass, after the optimizer was built too.
        (dict(forward_pass_builder_fun=input_as_loss, devices=[0, 1], shared_model=True),
         "loss 'data' is not produced"),
        (dict(forward_pass_builder_fun=mlp, devices=[1, 1]), 'device 1 is listed twice'),
        (dict(forward_pass_builder_fun=mlp, devices=[0, 1], shared_model=True,
              net_type=''), 'net_type is empty'),
    ]
    for kwargs, message in attempts:
        with pytest.raises(RuntimeError, match=message):
            data_parallel_model.Parallelize_CPU(
                model, input_builder_fun=lambda m: None,
                optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
                **kwargs)
        assert snapshot(model) == before, message
        assert model.params is params_list
        assert not hasattr(model, '_device_grouped_blobs')
    # The model is still usable: the same call without the mistake works.
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=mlp,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1, momentum=0.9),
        devices=[0, 1], shared_model=True)
    assert model.params is params_list
    assert [str(p) for p in model.params] == ['cpu_0/' + p for p in MLP_PARAMS]
    data_parallel_model.RunInitNet(model)
    np.testing.assert_array_equal(workspace.FetchBlob('shared_scale'), [2.0])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
