"""Parallelize_GPU with a rendezvous, run: 2 processes train the MLP, each
fed its share of every global batch, and must end with the params of plain
SGD on the whole batch computed in numpy, every device of every shard
alike, having started from shard 0's params although each drew its own.

Without a GPU the GPU nets run retargeted to CPU devices (same graph, same
op order: the Copy + Sum tree, Gloo Allreduce and Broadcast on the host),
which checks their arithmetic and the shards' rendezvous. With GPUs the
same nets run on CUDA (the Gloo ops staged through pinned memory); those
cases skip without a GPU and fail then under DOPPIO_REQUIRE_GPU=1."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import numpy as np
import pytest

from doppio import core, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

from gpu_graph_checks import retarget_to_cpu
import mlp_reference
from mlp_fixture import PARAMS, batches, forward

LR = 0.1
NUM_SHARDS = 2
WALL_LIMIT_S = 120


def numpy_sgd(initial, steps):
    """Whole-batch plain SGD of the MLP (fc1, relu, fc2, softmax loss)."""
    return mlp_reference.numpy_sgd(initial, batches()[:steps], LR)


def worker(spec, out):
    """One shard: rendezvous through a file store, init, train, report."""
    workspace.ResetWorkspace()
    workspace.RunOperatorOnce(core.CreateOperator(
        'FileStoreHandlerCreate', [], ['store_handler'], path=spec['store'],
        prefix=spec['prefix']))
    devices = spec['devices']
    model = model_helper.ModelHelper(name='gpu_shard')
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, LR), devices=devices,
        use_nccl=spec['use_nccl'],
        rendezvous=dict(kv_handler='store_handler', shard_id=spec['shard_id'],
                        num_shards=NUM_SHARDS, timeout_ms=30000))
    init, net = model.param_init_net.Proto(), model.net.Proto()
    on_cpu = spec['retarget']
    if on_cpu:
        init, net = retarget_to_cpu(init), retarget_to_cpu(net)
    # Each shard draws different params; the init net must replace them.
    for op in init.op:
        op.device_option.random_seed = 100 + spec['shard_id']

    def feed(name, value, device):
        option = None if on_cpu else core.DeviceOption(doppio_pb2.CUDA, device)
        workspace.FeedBlob('gpu_{}/{}'.format(device, name), value, device_option=option)

    def params():
        return {'{}/{}'.format(d, p): workspace.FetchBlob('gpu_{}/{}'.format(d, p)).tolist()
                for d in devices for p in PARAMS}

    workspace.RunNetOnce(init)
    report = dict(init=params())
    rows, left = divmod(len(batches()[0][0]), NUM_SHARDS * len(devices))
    assert not left, 'the global batch must split evenly over every device'
    for step, (x, y) in enumerate(batches()[:spec['steps']]):
        for i, d in enumerate(devices):
            first = (spec['shard_id'] * len(devices) + i) * rows
            feed('data', x[first:first + rows], d)
            feed('label', y[first:first + rows], d)
        if step == 0:
            workspace.CreateNet(net, overwrite=True)
        workspace.RunNet(net.name)
    report['trained'] = params()
    with open(out, 'w') as f:
        json.dump(report, f)


def run_shards(devices, use_nccl, retarget, steps=6):
    """Both shards' reports; fails the test if one hangs or fails."""
    scratch = tempfile.mkdtemp(prefix='doppio_gpu_shards_')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    prefix = uuid.uuid4().hex  # fresh store keys for this run
    processes = []
    for shard in range(NUM_SHARDS):
        spec = dict(store=scratch, prefix=prefix, shard_id=shard, devices=devices,
                    use_nccl=use_nccl, retarget=retarget, steps=steps)
        processes.append((os.path.join(scratch, 'shard{}.json'.format(shard)), spec))
    running = []
    try:
        for out, spec in processes:
            running.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), '--worker', json.dumps(spec), out],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        reports = []
        for (out, _), process in zip(processes, running):
            try:
                output, _ = process.communicate(timeout=WALL_LIMIT_S)
            except subprocess.TimeoutExpired:
                pytest.fail('a shard hung past {} s'.format(WALL_LIMIT_S))
            assert process.returncode == 0, output.decode(errors='replace')[-3000:]
            with open(out) as f:
                reports.append(json.load(f))
        return reports
    finally:
        for process in running:
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def check(reports, devices, steps=6):
    shard0 = {p: np.array(reports[0]['init']['{}/{}'.format(devices[0], p)]) for p in PARAMS}
    for report in reports:
        for d in devices:
            for p in PARAMS:
                np.testing.assert_array_equal(report['init']['{}/{}'.format(d, p)], shard0[p])
    expected = numpy_sgd(shard0, steps)
    assert not np.allclose(expected['fc1_w'], shard0['fc1_w'])
    for shard, report in enumerate(reports):
        for d in devices:
            for p in PARAMS:
                np.testing.assert_allclose(report['trained']['{}/{}'.format(d, p)], expected[p],
                                           rtol=1e-4, atol=1e-5,
                                           err_msg='shard {} device {} {}'.format(shard, d, p))


@pytest.mark.parametrize('devices', [[0], [0, 1], [1, 2, 4, 7]])
def test_gpu_shards_retargeted_to_cpu(devices):
    reports = run_shards(devices, use_nccl=False, retarget=True)
    check(reports, devices)


def gpus_or_skip(count):
    have = workspace.NumCudaDevices()
    if have >= count:
        return
    if have == 0 and os.environ.get('DOPPIO_REQUIRE_GPU', '') not in ('', '0', 'false', 'off'):
        pytest.fail('DOPPIO_REQUIRE_GPU is set but no GPU is usable: {}'.format(
            workspace.C.cuda_unavailable_reason()))
    pytest.skip('needs {} GPU(s), {} usable ({})'.format(
        count, have, workspace.C.cuda_unavailable_reason() or 'too few'))


@pytest.mark.parametrize('devices,use_nccl', [([0], False), ([0, 1], True), ([0, 1], False)])
def test_gpu_shards_on_cuda(devices, use_nccl):
    gpus_or_skip(len(devices))
    reports = run_shards(devices, use_nccl=use_nccl, retarget=False)
    check(reports, devices)


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--worker':
        worker(json.loads(sys.argv[2]), sys.argv[3])
    else:
        sys.exit(pytest.main([__file__, '-v']))
