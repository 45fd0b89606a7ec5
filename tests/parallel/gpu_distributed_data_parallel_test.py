"""Parallelize_GPU with a rendezvous (several processes x several GPUs),
checked as graphs without a GPU: every shard builds its own nets (its
shard_id) and a symbolic run of all shards together, in the listed order
and in random orders the dag executor may choose, shows that each device of
each shard updates with the sum over every device of every shard, and that
the init net leaves shard 0's device-0 params everywhere. Each gradient
crosses the shards exactly once, in one Gloo Allreduce on device 0's CUDA
tensor, after the local reduction to device 0 (NCCLReduce, or the Copy +
Sum tree) and before the local broadcast; the Gloo ops are chained in
reverse order of first use, identically in every shard; every op has a
kernel for its device."""
import collections
import sys

import pytest

from doppio import data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2
from python_api.examples import fmnist_train

from gpu_graph_checks import (PREFIX, check_placement, device_of, is_shard_collective,
                              missing_kernels, random_orders, run_shards, strip)
from mlp_fixture import forward, fresh_workspace  # noqa: F401

STORE = 'store_handler'
WORLD = 'data_parallel_model_common_world'


def reference_cnn(model, loss_scale):
    softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


MODELS = {'mlp': forward, 'cnn': reference_cnn}


def parallelize_shard(forward_fun, devices, use_nccl, shard_id, num_shards, **kwargs):
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='gpu_shards')
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward_fun,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.05, momentum=0.9),
        devices=devices, use_nccl=use_nccl,
        rendezvous=dict(kv_handler=STORE, shard_id=shard_id, num_shards=num_shards,
                        engine='GLOO', transport='tcp', interface='', exit_nets=None),
        **kwargs)
    return model


def shard_models(forward_fun, devices, use_nccl, num_shards, **kwargs):
    return [parallelize_shard(forward_fun, devices, use_nccl, s, num_shards, **kwargs)
            for s in range(num_shards)]


def template_grads(model):
    prefix = 'gpu_{}/'.format(model._devices[0])
    return {str(p)[len(prefix):]: str(g)[len(prefix):]
            for p, g in model.param_to_grad.items() if str(p).startswith(prefix)}


def check_train_nets(models, devices, use_nccl, rng=None):
    nets = [m.net.Proto() for m in models]
    grads = template_grads(models[0])
    assert grads
    num_shards = len(models)
    everyone = collections.Counter({(s, d): 1 for s in range(num_shards) for d in devices})

    def local(shard, op, blob):
        return collections.Counter({(shard, device_of(blob)): 1})

    reads = run_shards(nets, [{} for _ in nets], local, rng)
    summing = ('Copy', 'Sum', 'NCCLReduce', 'NCCLBroadcast', 'NCCLAllreduce')
    for shard, shard_reads in enumerate(reads):
        readers = collections.defaultdict(list)
        for index, op, seen in shard_reads:
            if op.type in summing or is_shard_collective(op):
                continue
            for blob, value in seen.items():
                if strip(blob) in grads.values() and PREFIX.match(blob):
                    # Everything else reading a gradient is an update op.
                    assert value == everyone, (shard, op.type, blob, value)
                    readers[strip(blob)].append(index)
        assert sorted(readers) == sorted(grads.values()), (shard, sorted(readers))
        for grad, indices in readers.items():
            assert len(indices) == len(devices), (shard, grad, indices)


def check_collectives(models, devices, use_nccl):
    grads = template_grads(models[0])
    grad_to_param = {g: p for p, g in grads.items()}
    master = 'gpu_{}/'.format(devices[0])
    sequences = []
    for shard, model in enumerate(models):
        net = model.net.Proto()
        check_placement(net, devices, model._shared_blobs | {WORLD})
        gloo = [op for op in net.op if is_shard_collective(op)]
        assert [op.type for op in gloo] == ['Allreduce'] * len(grads), [op.type for op in gloo]
        # Exactly once per gradient, on device 0's copy, on device 0.
        assert sorted(strip(op.input[1]) for op in gloo) == sorted(grads.values())
        previous = None
        for op in gloo:
            assert list(op.input) == [WORLD, op.output[0]] and op.output[0].startswith(master)
            assert op.device_option.device_type == doppio_pb2.CUDA
            assert op.device_option.cuda_gpu_id == devices[0]
            assert list(op.control_input) == ([previous] if previous else [])
            previous = op.output[0]
        sequences.append([(op.type, list(op.input)) for op in gloo])
        # Reverse order of the params' first forward use.
        first_use = {}
        for position, op in enumerate(net.op):
            for blob in op.input:
                first_use.setdefault(blob, position)
        order = [first_use[master + grad_to_param[strip(op.input[1])]] for op in gloo]
        assert order == sorted(order, reverse=True), order
        local = collections.Counter(op.type for op in net.op if op.type.startswith('NCCL'))
        if len(devices) == 1 or not use_nccl:
            assert not local
        else:
            assert local == {'NCCLReduce': len(grads), 'NCCLBroadcast': len(grads)}, local
        if not use_nccl and len(devices) > 1:
            tree = [op for op in net.op if op.type in ('Copy', 'Sum')
                    and strip(op.output[0]).split('_gpu')[0] in grads.values()]
            # n - 1 Copy + Sum pairs into device 0, n - 1 Copies back.
            assert len(tree) == len(grads) * 3 * (len(devices) - 1), len(tree)
        assert not missing_kernels(net, model.param_init_net.Proto())
    assert all(s == sequences[0] for s in sequences)


def check_init_nets(models, devices, num_shards):
    inits = [m.param_init_net.Proto() for m in models]
    for shard, (model, init) in enumerate(zip(models, inits)):
        check_placement(init, devices, model._shared_blobs | {WORLD, STORE})
        worlds = [op for op in init.op if op.type == 'CreateCommonWorld']
        assert len(worlds) == 1 and list(worlds[0].input) == [STORE]
        args = {a.name: a for a in worlds[0].arg}
        assert (args['size'].i, args['rank'].i) == (num_shards, shard)
        first_gloo = next(i for i, op in enumerate(init.op) if is_shard_collective(op))
        assert list(init.op).index(worlds[0]) < first_gloo

    def local(shard, op, blob):
        return collections.Counter({('init', shard, device_of(blob)): 1})

    states = [{} for _ in inits]
    run_shards(inits, states, local)
    synced = [str(p) for p in models[0].params] + [str(p) for p in models[0]._computed_params]
    assert len(synced) == len(devices) * len(set(strip(b) for b in synced))
    for shard, state in enumerate(states):
        for blob in synced:
            assert state[blob] == collections.Counter({('init', 0, devices[0]): 1}), (
                shard, blob, state[blob])


@pytest.mark.parametrize('model_name', sorted(MODELS))
@pytest.mark.parametrize('devices', [[0], [0, 1], [0, 1, 2, 3]])
@pytest.mark.parametrize('use_nccl', [True, False])
def test_two_shards(model_name, devices, use_nccl):
    models = shard_models(MODELS[model_name], devices, use_nccl, 2)
    check_collectives(models, devices, use_nccl)
    check_train_nets(models, devices, use_nccl)
    check_init_nets(models, devices, 2)


@pytest.mark.parametrize('use_nccl', [True, False])
def test_three_shards_odd_devices_in_random_orders(use_nccl):
    devices = [1, 4, 6]
    models = shard_models(forward, devices, use_nccl, 3)
    check_collectives(models, devices, use_nccl)
    check_init_nets(models, devices, 3)
    for rng in random_orders(4):
        check_train_nets(models, devices, use_nccl, rng)


def test_the_symbolic_run_catches_a_missing_shard_sum():
    """The checks can fail: a shard without one Gloo Allreduce hangs the
    others (they wait in a different collective) and a dropped local
    broadcast leaves a device without the other shards' contributions."""
    models = shard_models(forward, [0, 1], False, 2)
    net = models[1].net.Proto()
    index = next(i for i, op in enumerate(net.op) if is_shard_collective(op))
    del net.op[index]
    with pytest.raises(AssertionError, match='hang'):
        check_train_nets(models, [0, 1], False)

    models = shard_models(forward, [0, 1], False, 2)
    net = models[0].net.Proto()
    index = next(i for i, op in enumerate(net.op)
                 if op.type == 'Copy' and op.output[0] == 'gpu_1/fc1_w_grad')
    del net.op[index]
    with pytest.raises(AssertionError):
        check_train_nets(models, [0, 1], False)


def test_random_orders_catch_unchained_shard_collectives():
    """Without NCCL nothing but the control-input chain orders the Gloo ops:
    unchained, some schedule starts two at once and the shards would meet
    in different collectives."""
    models = shard_models(forward, [0, 1], False, 2)
    for op in models[1].net.Proto().op:
        if is_shard_collective(op):
            del op.control_input[:]
    caught = 0
    for rng in random_orders(6):
        try:
            check_train_nets(models, [0, 1], False, rng)
        except AssertionError as error:
            assert 'hang' in str(error)
            caught += 1
    assert caught > 0


def test_cpu_devices_keep_their_buckets():
    """CPU shards still bucket (AllreduceCoalesced) and allreduce locally."""
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='cpu_shards')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.05, momentum=0.9),
        devices=[0, 1], rendezvous=dict(kv_handler=STORE, shard_id=0, num_shards=2))
    types = collections.Counter(op.type for op in model.net.Proto().op)
    assert types['AllreduceCoalesced'] == 1 and types['Allreduce'] == 4, types
    assert types['Broadcast'] == 4
    worlds = [op for op in model.param_init_net.Proto().op if op.type == 'CreateCommonWorld']
    assert worlds[0].device_option.device_type == doppio_pb2.CPU


def test_gpu_buckets_are_single_gradients_and_blob_sync_goes_to_the_gpu():
    models = shard_models(forward, [0, 1], True, 2)
    model = models[0]
    net = model.net.Proto()
    assert not [op for op in net.op if op.type == 'AllreduceCoalesced']
    data_parallel_model.AddDistributedBlobSync(model, ['gpu_1/fc1_w'])
    sync = net.op[-1]
    assert (sync.type, sync.engine, list(sync.input)) == ('Allreduce', 'GLOO',
                                                          [WORLD, 'gpu_1/fc1_w'])
    assert (sync.device_option.device_type, sync.device_option.cuda_gpu_id) == (
        doppio_pb2.CUDA, 1)
    with pytest.raises(ValueError, match='different devices'):
        data_parallel_model.AddDistributedBlobSync(model, ['gpu_0/fc1_w', 'gpu_1/fc1_w'])


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
