"""Parallelize across more processes and a bigger model: 4, 8 and 16
processes x 1 device train the MLP 10 steps to the params of one process on the whole
batch; 2 processes x 1 device train the full reference CNN (per-shard BN)
4 steps to the params of one process with 2 devices fed the same per-device
batches -- in-process and cross-process reduction both just sum the
gradients. Each runs with a file store and with a redis-server."""
import json
import os
import sys
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import run_workers  # noqa: E402
import distributed_training_worker as worker  # noqa: E402
from gloo_collectives_test import file_store, redis_server  # noqa: E402,F401
from parallelize_distributed_test import single_process_reference  # noqa: E402

WORKER = os.path.join(HERE, 'distributed_training_worker.py')
WALL_LIMIT_S = 45


def launch(store, specs, prefix=None, timeout_ms=10000, wall_limit_s=WALL_LIMIT_S):
    """Runs one worker per spec (dicts with shard_id, num_shards, model and
    any of the worker's options), all under one key prefix (fresh unless
    given); returns (reports, seconds each process took to exit). Fails the
    test if any outlives wall_limit_s."""
    prefix = prefix or uuid.uuid4().hex

    def command(shard):
        spec = dict(store=store, prefix=prefix, timeout_ms=timeout_ms, **shard)
        return lambda out: [sys.executable, WORKER, json.dumps(spec), out]

    return run_workers([command(shard) for shard in specs], wall_limit_s,
                       tag='doppio_scale_out_')


@pytest.fixture(params=['file', 'redis'])
def store(request):
    """Each test once with a file store and once with a redis-server (started
    once per module, only when a Redis variant runs); launch() gives every
    run a fresh key prefix."""
    return request.getfixturevalue('file_store' if request.param == 'file' else 'redis_server')


def assert_trained(reports):
    for shard, report in enumerate(reports):
        assert 'error' not in report and 'exit' not in report, (
            shard, report.get('error') or report.get('output'))


def mlp_specs(num_shards, **extra):
    return [dict(shard_id=s, num_shards=num_shards, model='mlp', **extra)
            for s in range(num_shards)]


def test_four_shards_train_the_mlp_like_one_process(store):
    check_mlp_like_one_process(launch(store, mlp_specs(4))[0])


def test_eight_shards_train_the_mlp_like_one_process(file_store):
    """Issue 26's scale: 8 processes on loopback, one row of the batch of 8
    each (file store only: 8 interpreters start on 2 cores)."""
    check_mlp_like_one_process(launch(file_store, mlp_specs(8), wall_limit_s=150)[0])


def test_sixteen_shards_train_the_mlp_like_one_process(file_store):
    """16 processes on loopback: shards 2k and 2k + 1 share row k of the
    batch of 8 (the worker's rule), which sums to the one-process run."""
    check_mlp_like_one_process(launch(file_store, mlp_specs(16), timeout_ms=30000,
                                      wall_limit_s=300)[0])


def check_mlp_like_one_process(reports):
    assert_trained(reports)
    initial = reports[0]['init']
    for report in reports[1:]:
        assert report['init'] == initial  # shard 0's, broadcast
    expected = single_process_reference(initial)
    for p in worker.mlp.PARAMS:
        assert not np.allclose(expected[p], initial[p]), p  # it trained
        for shard, report in enumerate(reports):
            np.testing.assert_allclose(report['final'][p], expected[p], rtol=1e-5, atol=1e-6,
                                       err_msg='shard %d %s' % (shard, p))


def cnn_two_devices_reference(initial):
    """One process, two devices, per-device BN, each device fed the rows
    the matching shard gets."""
    from doppio import data_parallel_model, model_helper, optimizer, workspace
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='reference_cnn_two_devices')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=worker.cnn_forward,
        optimizer_builder_fun=worker.cnn_sgd, devices=[0, 1], num_threads_per_device=1,
        combine_spatial_bn=False)
    data_parallel_model.RunInitNet(model)
    for name, value in initial.items():
        workspace.FeedBlob('cpu_0/' + name, np.array(value, np.float32))
    data_parallel_model.FinalizeAfterCheckpoint(model)
    per_device = worker.CNN_BATCH // 2
    for x, y in worker.cnn_batches():
        for device in (0, 1):
            rows = slice(device * per_device, (device + 1) * per_device)
            workspace.FeedBlob('cpu_%d/data' % device, x[rows])
            workspace.FeedBlob('cpu_%d/label' % device, y[rows])
        data_parallel_model.RunNet(model, 1)
    names = worker.CNN_PARAMS + worker.CNN_STATS
    result = [{p: workspace.FetchBlob('cpu_%d/%s' % (d, p)) for p in names} for d in (0, 1)]
    workspace.ResetWorkspace()
    return result


def test_two_shards_train_the_reference_cnn_like_two_devices(store):
    reports, _ = launch(store, [dict(shard_id=s, num_shards=2, model='cnn')
                                     for s in range(2)])
    assert_trained(reports)
    initial = reports[0]['init']
    assert reports[1]['init'] == initial
    expected = cnn_two_devices_reference(initial)
    for p in ['conv1_w', 'bn1_s', 'fc3_w', 'pred_w']:
        assert not np.allclose(expected[0][p], initial[p]), p  # it trained
    for shard, report in enumerate(reports):
        # Params agree everywhere; BN statistics are each device's (shard's) own.
        for p in worker.CNN_PARAMS:
            np.testing.assert_allclose(report['final'][p], expected[0][p], rtol=1e-4, atol=5e-5,
                                       err_msg='shard %d %s' % (shard, p))
        for p in worker.CNN_STATS:
            np.testing.assert_allclose(report['final'][p], expected[shard][p], rtol=1e-4,
                                       atol=5e-5, err_msg='shard %d %s' % (shard, p))
    # Per-shard BN really is per shard: the shards saw different rows.
    assert not np.allclose(reports[0]['final']['bn1_rm'], reports[1]['final']['bn1_rm'])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
