"""Parallelize with a rendezvous: 2 processes x 1 and 2 x 2 CPU devices,
rendezvousing through a file store or a real redis-server, each process fed
its slice of every global batch of 8, train the MLP with momentum SGD to
the same params as one process on one device fed the whole batch; the
shards start from shard 0's params though each draws its own; a blob
synced with AddDistributedBlobSync is summed over the shards; Synchronize
waits for the last shard; a shard given the wrong num_shards fails with an
error within the timeout instead of hanging."""
import json
import os
import sys
import uuid

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker_processes import run_workers  # noqa: E402
import parallelize_distributed_worker as worker  # noqa: E402
# The redis-server and file-store fixtures of the Gloo collectives test.
from gloo_collectives_test import file_store, redis_server  # noqa: E402,F401

WORKER = os.path.join(HERE, 'parallelize_distributed_worker.py')
WALL_LIMIT_S = 60


def launch(store, scenario, shard_specs, timeout_ms=10000):
    """Runs one worker per entry of shard_specs (dicts with shard_id,
    num_shards, devices); returns their reports in that order. Fails the
    test if any outlives WALL_LIMIT_S."""
    prefix = uuid.uuid4().hex  # fresh keys: Redis keeps those of earlier tests

    def command(shard):
        spec = dict(store=store, prefix=prefix, scenario=scenario, timeout_ms=timeout_ms,
                    **shard)
        return lambda out: [sys.executable, WORKER, json.dumps(spec), out]

    return run_workers([command(shard) for shard in shard_specs], WALL_LIMIT_S,
                       tag='doppio_dpm_out_')[0]


def single_process_reference(initial):
    """One process, one device, the whole batch each step, from `initial`."""
    from doppio import data_parallel_model, model_helper, optimizer, workspace
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='reference_mlp')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=worker.forward,
        optimizer_builder_fun=worker.build_sgd, devices=[0], num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    for name, value in initial.items():
        workspace.FeedBlob('cpu_0/' + name, np.array(value, np.float32))
    data_parallel_model.FinalizeAfterCheckpoint(model)
    for x, y in worker.batches():
        workspace.FeedBlob('cpu_0/data', x)
        workspace.FeedBlob('cpu_0/label', y)
        data_parallel_model.RunNet(model, 1)
    params = {p: workspace.FetchBlob('cpu_0/' + p) for p in worker.PARAMS}
    workspace.ResetWorkspace()
    return params


def check_training(reports, num_shards, devices):
    for shard, report in enumerate(reports):
        assert 'error' not in report and 'exit' not in report, (
            shard, report.get('error') or report.get('output'))
    # Each shard drew its own params; the init net gave every device of
    # every shard shard 0's.
    shard0_own = reports[0]['own_init']
    for p in ('fc1_w', 'fc2_w'):  # the biases start at zero everywhere
        assert not np.allclose(reports[1]['own_init'][p], shard0_own[p]), p
    for shard, report in enumerate(reports):
        for device in range(devices):
            for p in worker.PARAMS:
                np.testing.assert_array_equal(report['init'][str(device)][p], shard0_own[p],
                                              err_msg='shard %d device %d %s' % (shard, device, p))
    expected = single_process_reference(shard0_own)
    for p in worker.PARAMS:
        assert not np.allclose(expected[p], shard0_own[p]), p  # it trained
    final0 = reports[0]['final']['0']
    for shard, report in enumerate(reports):
        for device in range(devices):
            for p in worker.PARAMS:
                got = np.array(report['final'][str(device)][p])
                where = 'shard %d device %d %s' % (shard, device, p)
                np.testing.assert_allclose(got, expected[p], rtol=1e-5, atol=1e-6,
                                           err_msg=where)
                # Every shard applies the same summed gradients.
                np.testing.assert_array_equal(got, final0[p], err_msg=where)
    # AddDistributedBlobSync sums the blob over the shards (Caffe2's
    # Allreduce); the last step fed (shard + 1) * STEPS on each.
    last = worker.STEPS - 1
    total = sum(worker.counter_value(s, last)[0] for s in range(num_shards))
    for report in reports:
        np.testing.assert_allclose(report['synced'], [total])
    # Synchronize returns only once the last shard (which came late) calls it.
    assert reports[0]['synchronize_s'] > 0.5 * worker.SYNCHRONIZE_DELAY_S, reports[0]
    assert reports[-1]['synchronize_s'] < worker.SYNCHRONIZE_DELAY_S, reports[-1]


@pytest.mark.parametrize('devices', [1, 2])
def test_two_shards_file_store_match_single_process(file_store, devices):
    shards = [dict(shard_id=s, num_shards=2, devices=devices) for s in range(2)]
    check_training(launch(file_store, 'train', shards), 2, devices)


@pytest.mark.parametrize('devices', [1, 2])
def test_two_shards_redis_store_match_single_process(redis_server, devices):
    shards = [dict(shard_id=s, num_shards=2, devices=devices) for s in range(2)]
    check_training(launch(redis_server, 'train', shards), 2, devices)


def test_wrong_num_shards_fails_within_the_timeout(file_store):
    timeout_ms = 1500
    shards = [dict(shard_id=0, num_shards=2, devices=1),
              dict(shard_id=1, num_shards=3, devices=1)]
    reports = launch(file_store, 'init_only', shards, timeout_ms=timeout_ms)
    for shard, report in enumerate(reports):
        assert 'error' in report, (shard, report)
        assert report['elapsed'] < 2 * timeout_ms / 1000.0 + 5, report
    # The shard waiting for a third never connects: the rendezvous names it.
    assert 'CreateCommonWorld' in reports[1]['error'], reports[1]['error']
    assert 'rank 1 of 3' in reports[1]['error'], reports[1]['error']


def test_rendezvous_errors_before_any_process_work():
    from doppio import data_parallel_model, model_helper, workspace
    workspace.ResetWorkspace()

    def parallelize(rendezvous):
        model = model_helper.ModelHelper(name='bad_rendezvous')
        data_parallel_model.Parallelize_CPU(
            model, input_builder_fun=lambda m: None, forward_pass_builder_fun=worker.forward,
            optimizer_builder_fun=worker.build_sgd, devices=[0], rendezvous=rendezvous)
        return model

    with pytest.raises(ValueError, match='kv_handler'):
        parallelize(dict(shard_id=0, num_shards=2))
    with pytest.raises(ValueError, match='unknown rendezvous keys'):
        parallelize(dict(kv_handler='h', shard_id=0, num_shards=2, world=3))
    with pytest.raises(RuntimeError, match='shard_id 2 is not in'):
        parallelize(dict(kv_handler='h', shard_id=2, num_shards=2))
    with pytest.raises(NotImplementedError, match='GLOO'):
        parallelize(dict(kv_handler='h', shard_id=0, num_shards=2, engine='MPI'))
    # num_shards 1 is a single process, as in Caffe2: no collectives.
    model = parallelize(dict(kv_handler='h', shard_id=0, num_shards=1))
    types = [op.type for op in model.param_init_net.Proto().op]
    assert 'CreateCommonWorld' not in types
    data_parallel_model.Synchronize(model)  # nothing to wait for
    workspace.ResetWorkspace()


def parallelize_pass_shape(**rendezvous_extra):
    from doppio import data_parallel_model, model_helper, workspace
    workspace.ResetWorkspace()
    model = model_helper.ModelHelper(name='pass_shape')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=worker.forward,
        optimizer_builder_fun=worker.build_sgd, devices=[0, 1],
        rendezvous=dict(kv_handler='h', shard_id=1, num_shards=2, **rendezvous_extra))
    return model


def test_pass_orders_collectives_and_chains_them():
    """bucket_cap_mb=0 (Caffe2's way). The net: per gradient, in-process
    Allreduce, then Gloo Allreduce of device 0's copy, then in-process
    Broadcast; each Gloo op after the previous one. The init net: the world, then per param
    Gloo Broadcast before the in-process one."""
    from doppio import workspace
    model = parallelize_pass_shape(bucket_cap_mb=0)
    world = 'data_parallel_model_common_world'
    ops = list(model.net.Proto().op)
    gloo = [i for i, op in enumerate(ops) if op.engine == 'GLOO']
    assert len(gloo) == len(worker.PARAMS)
    previous = None
    for i in gloo:
        op = ops[i]
        assert op.type == 'Allreduce' and op.input[0] == world
        grad = op.input[1]
        assert grad.startswith('cpu_0/') and list(op.output) == [grad]
        local = grad[len('cpu_0/'):]
        pair = ['cpu_0/' + local, 'cpu_1/' + local]
        reduce_at = [j for j, other in enumerate(ops) if other.type == 'Allreduce' and
                     other.engine != 'GLOO' and list(other.input) == pair]
        broadcast_at = [j for j, other in enumerate(ops)
                        if other.type == 'Broadcast' and list(other.input) == pair]
        assert len(reduce_at) == 1 and len(broadcast_at) == 1, grad
        assert reduce_at[0] < i < broadcast_at[0], grad
        assert list(op.control_input) == ([] if previous is None else [previous])
        previous = grad
    # Reverse forward order: fc2's gradients are reduced before fc1's.
    reduced = [ops[i].input[1] for i in gloo]
    assert reduced.index('cpu_0/fc2_w_grad') < reduced.index('cpu_0/fc1_w_grad')
    init = list(model.param_init_net.Proto().op)
    create = [i for i, op in enumerate(init) if op.type == 'CreateCommonWorld']
    assert len(create) == 1
    world_op = init[create[0]]
    assert list(world_op.input) == ['h'] and list(world_op.output) == [world]
    args = {a.name: a for a in world_op.arg}
    assert args['size'].i == 2 and args['rank'].i == 1
    for p in worker.PARAMS:
        shards = [i for i, op in enumerate(init)
                  if op.engine == 'GLOO' and op.input[1:] == ['cpu_0/' + p]]
        local = [i for i, op in enumerate(init)
                 if op.type == 'Broadcast' and op.engine != 'GLOO' and
                 list(op.input) == ['cpu_0/' + p, 'cpu_1/' + p]]
        assert len(shards) == 1 and len(local) == 1, p
        assert create[0] < shards[0] < local[0], p
    workspace.ResetWorkspace()


def test_default_buckets_pack_the_mlp_gradients_into_one_collective():
    """The MLP's gradients are far under the first bucket's 1 MiB: one
    AllreduceCoalesced of device 0's copies, in reverse forward order, after
    every gradient's in-process Allreduce and before the local Broadcasts."""
    from doppio import workspace
    model = parallelize_pass_shape()
    ops = list(model.net.Proto().op)
    gloo = [i for i, op in enumerate(ops) if op.engine == 'GLOO']
    assert len(gloo) == 1
    bucket = ops[gloo[0]]
    assert bucket.type == 'AllreduceCoalesced'
    grads = ['cpu_0/%s_grad' % p for p in ('fc2_b', 'fc2_w', 'fc1_b', 'fc1_w')]
    assert sorted(bucket.input[1:]) == sorted(grads) and list(bucket.output) == list(
        bucket.input[1:])
    assert list(bucket.input[1:]).index('cpu_0/fc2_w_grad') < list(
        bucket.input[1:]).index('cpu_0/fc1_w_grad')
    for grad in grads:
        local = grad[len('cpu_0/'):]
        pair = ['cpu_0/' + local, 'cpu_1/' + local]
        reduce_at = [i for i, op in enumerate(ops)
                     if op.type == 'Allreduce' and list(op.input) == pair]
        broadcast_at = [i for i, op in enumerate(ops)
                        if op.type == 'Broadcast' and list(op.input) == pair]
        assert len(reduce_at) == 1 and len(broadcast_at) == 1, grad
        assert reduce_at[0] < gloo[0] < broadcast_at[0], grad
    workspace.ResetWorkspace()


def test_small_buckets_split_the_gradients_in_order():
    """A cap just under fc1_w's bytes: buckets close once they reach the cap,
    in reverse forward order (fc2 before fc1; a layer's w before its b, as
    the pass breaks first-use ties by name, descending). Each gradient is in
    exactly one collective; the collectives are chained in emission order."""
    from doppio import workspace
    elements = {'fc1_w': worker.HIDDEN * worker.D_IN, 'fc1_b': worker.HIDDEN,
                'fc2_w': worker.D_OUT * worker.HIDDEN, 'fc2_b': worker.D_OUT}
    cap_bytes = elements['fc1_w'] * 4 - 1
    model = parallelize_pass_shape(bucket_cap_mb=cap_bytes / float(1 << 20))
    ops = list(model.net.Proto().op)
    gloo = [op for op in ops if op.engine == 'GLOO']
    expected, current, total = [], [], 0
    for param in ['fc2_w', 'fc2_b', 'fc1_w', 'fc1_b']:
        current.append(param)
        total += elements[param] * 4
        if total >= cap_bytes:
            expected.append(current)
            current, total = [], 0
    if current:
        expected.append(current)
    assert len(expected) == 2  # the cap does split the MLP's gradients
    got = [[g[len('cpu_0/'):-len('_grad')] for g in op.input[1:]] for op in gloo]
    assert got == expected
    for op, bucket in zip(gloo, expected):
        assert op.type == ('Allreduce' if len(bucket) == 1 else 'AllreduceCoalesced')
    for previous, op in zip(gloo, gloo[1:]):
        assert list(op.control_input) == [previous.output[-1]]
    workspace.ResetWorkspace()


def test_sparse_gradients_across_shards_are_refused():
    from doppio import data_parallel_model, model_helper, workspace
    workspace.ResetWorkspace()

    def embedding(model, loss_scale):
        table = model.create_param('emb', [6, 3], model_helper.Initializer('XavierFill'))
        rows = model.net.Gather([table, 'ids'], 'rows')
        loss = model.net.SumElements(rows, 'loss')
        return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]

    model = model_helper.ModelHelper(name='sparse_shards')
    with pytest.raises(NotImplementedError, match="sparse gradients across shards.*'emb'"):
        data_parallel_model.Parallelize_CPU(
            model, input_builder_fun=lambda m: None, forward_pass_builder_fun=embedding,
            optimizer_builder_fun=worker.build_sgd, devices=[0],
            rendezvous=dict(kv_handler='h', shard_id=0, num_shards=2))
    assert not model.params  # all or nothing: the model is as it was
    workspace.ResetWorkspace()


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
