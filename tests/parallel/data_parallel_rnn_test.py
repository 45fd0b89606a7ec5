"""An LSTM (RecurrentNetwork, whose step nets name blobs in arguments)
trained data-parallel: Parallelize_CPU puts every replica's step nets on its
own blobs, and training on 1, 2 and 4 CPU devices with the same total batch
gives the same parameters (up to float summation order) as one device."""
import sys

import numpy as np
import pytest

from doppio import brew, data_parallel_model, model_helper, rnn_cell, workspace

T, BATCH, D, H = 5, 8, 3, 4
STEPS = 3


def train(devices):
    workspace.ResetWorkspace()
    per_device = BATCH // len(devices)
    model = model_helper.ModelHelper(name='rnn_dp_{}'.format(len(devices)))

    def forward(model, loss_scale):
        model.param_init_net.ConstantFill([], 'hidden_init', value=0.0,
                                          shape=[1, per_device, H])
        model.param_init_net.ConstantFill([], 'cell_init', value=0.0, shape=[1, per_device, H])
        output, _, _, _ = rnn_cell.LSTM(model, 'data', 'seq_lengths',
                                        ('hidden_init', 'cell_init'), D, H, scope='lstm')
        dist = model.net.Sub([output, 'target'], 'dist')
        loss = model.net.AveragedLoss(model.net.Mul([dist, dist], 'sq'), 'loss')
        return [model.net.Scale(loss, 'loss_scaled', scale=loss_scale)]

    def update(model):
        iteration = brew.iter(model, 'ITER')
        lr = model.net.LearningRate([iteration], 'LR', base_lr=-0.5, policy='fixed')
        one = model.param_init_net.ConstantFill([], 'ONE', shape=[1], value=1.0)
        for param in model.GetParams():
            model.net.WeightedSum([param, one, model.param_to_grad[param], lr], param)

    data_parallel_model.Parallelize_CPU(model, input_builder_fun=lambda m: None,
                                        forward_pass_builder_fun=forward,
                                        param_update_builder_fun=update, devices=devices)
    # Deterministic parameters, the same for every device count.
    rng = np.random.RandomState(0)
    init_values = {}
    workspace.RunNetOnce(model.param_init_net)
    for param in model.GetParams('cpu_0'):
        base = str(param).split('/', 1)[1]
        shape = workspace.FetchBlob(param).shape
        init_values.setdefault(base, (0.3 * rng.randn(*shape)).astype(np.float32))
        for device in devices:
            workspace.FeedBlob('cpu_{}/{}'.format(device, base), init_values[base])
    data_rng = np.random.RandomState(1)
    for step in range(STEPS):
        data = data_rng.rand(T, BATCH, D).astype(np.float32)
        target = data_rng.rand(T, BATCH, H).astype(np.float32)
        lengths = data_rng.randint(1, T + 1, size=BATCH).astype(np.int32)
        for i, device in enumerate(devices):
            rows = slice(i * per_device, (i + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(device), data[:, rows])
            workspace.FeedBlob('cpu_{}/target'.format(device), target[:, rows])
            workspace.FeedBlob('cpu_{}/seq_lengths'.format(device), lengths[rows])
        if step == 0:
            workspace.CreateNet(model.net)
        workspace.RunNet(model.net)
    return {base: workspace.FetchBlob('cpu_0/' + base) for base in init_values}, model


def test_step_nets_of_each_replica_name_its_own_blobs():
    _, model = train([0, 1])
    ops = [op for op in model.net.Proto().op if op.type == 'RecurrentNetwork']
    assert len(ops) == 2
    for device, op in enumerate(ops):
        prefix = 'cpu_{}/'.format(device)
        step = [a for a in op.arg if a.name == 'step_net'][0].n
        blobs = [b for o in step.op for b in list(o.input) + list(o.output)]
        assert blobs and all(b.startswith(prefix) for b in blobs), blobs
        links = [a for a in op.arg if a.name == 'link_external'][0].strings
        assert all(b.decode().startswith(prefix) for b in links)


@pytest.mark.parametrize('devices', [[0, 1], [0, 1, 2, 3]])
def test_training_matches_one_device(devices):
    reference, _ = train([0])
    got, _ = train(devices)
    assert reference.keys() == got.keys()
    for name in reference:
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
