"""Gradient accumulation over batches fed from Python (Parallelize
accumulate_steps=K, the usual Caffe2 loop: FeedBlob a step's rows, RunNet):
each micro-step runs on its 1/K of the fed rows, so K micro-steps see the fed
batch once, and the step trains to the params of one step over the whole
batch. The row counts are what tell this apart from running the forward K
times over all the rows (which the 1/K loss scale would make look right)."""
import sys

import numpy as np
import pytest

from doppio import data_parallel_model, model_helper, optimizer, workspace

from mlp_fixture import (BATCH, PARAMS, batches, forward, fresh_workspace,  # noqa: F401
                         initial_params)

LR, MOMENTUM = 0.1, 0.9


def train(devices, accumulate_steps, steps=3, rows_seen=None, rows_per_device=None):
    """Device 0's params after `steps` fed steps of the fixture's batches,
    each split over `devices`; rows_seen collects the rows of 'data' every
    run of the forward saw (a Python op beside the forward)."""
    model = model_helper.ModelHelper(name='fed_{}_{}'.format(devices, accumulate_steps))

    def counted_forward(m, loss_scale):
        if rows_seen is not None:
            def count(inputs, outputs):
                rows_seen.append(inputs[0].shape[0])
                outputs[0].feed(np.zeros(1, np.float32))
            m.net.Python(count)(['data'], ['rows_probe'])
        return forward(m, loss_scale)

    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=counted_forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, LR, momentum=MOMENTUM),
        devices=list(range(devices)), accumulate_steps=accumulate_steps,
        num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    for name, value in initial_params().items():
        workspace.FeedBlob('cpu_0/' + name, value)
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = rows_per_device or BATCH // devices
    for x, y in batches()[:steps]:
        for d in range(devices):
            rows = slice(d * per_device, (d + 1) * per_device)
            workspace.FeedBlob('cpu_{}/data'.format(d), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(d), y[rows])
        data_parallel_model.RunNet(model, 1)
    return {p: workspace.FetchBlob('cpu_0/' + p) for p in PARAMS}, model


@pytest.mark.parametrize('devices', [1, 2])
def test_k_micro_steps_cover_the_fed_batch_once(devices):
    per_device = BATCH // devices
    one_step, _ = train(devices, 1)
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    rows_seen = []
    accumulated, model = train(devices, 2, rows_seen=rows_seen)
    for p in PARAMS:
        np.testing.assert_allclose(accumulated[p], one_step[p], rtol=2e-5, atol=2e-6, err_msg=p)
    # 3 steps x 2 micro-steps x each device: half the device's rows each time.
    assert rows_seen == [per_device // 2] * (3 * 2 * devices)
    assert workspace.FetchBlob('cpu_0/fc1').shape[0] == per_device // 2
    # After the step the fed blob is the whole batch again, as fed.
    x, _ = batches()[2]
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_0/data'), x[:per_device])
    plan = str(model._parallel_plan)
    assert 'fed inputs cut into 2 micro-batches: data, label' in plan


def test_a_fed_batch_k_does_not_divide_is_refused_naming_both():
    with pytest.raises(ValueError) as raised:
        train(1, 3, steps=1, rows_per_device=BATCH - 1)
    message = str(raised.value)
    assert "accumulate_steps=3" in message and "'cpu_0/data'" in message
    assert "{} rows".format(BATCH - 1) in message


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
