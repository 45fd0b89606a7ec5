"""Parallelize_GPU checked as a graph (no GPU needed): every op and blob of
the replicas lives under gpu_N/ on DeviceOption(CUDA, N); each gradient is
summed by one NCCLAllreduce on device 0 over every device's copy (in reverse
order of the params' first forward use, before the update ops read it), or
without NCCL by Copy + Sum ops that, evaluated symbolically here, leave
every device's copy holding every device's contribution; the init net gives
every device device 0's params. Running such a model without CUDA raises a
clear error."""
import collections
import sys

import pytest

from doppio import core, data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2
from python_api.examples import fmnist_train

from gpu_graph_checks import PREFIX, check_placement, device_of, evaluate
from mlp_fixture import PARAMS, forward, fresh_workspace  # noqa: F401

DEVICE_COUNTS = [1, 2, 4]


def reference_cnn(model, loss_scale):
    softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


MODELS = {'mlp': forward, 'cnn': reference_cnn}


def parallelize(forward_fun, devices, use_nccl, name='gpu_model'):
    model = model_helper.ModelHelper(name=name)
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward_fun,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.05, momentum=0.9),
        devices=devices, use_nccl=use_nccl)
    return model


def template_grads(model):
    """{template param: template gradient name} from the recorded groups."""
    return {str(p)[len('gpu_{}/'.format(model._devices[0])):]:
            str(g)[len('gpu_{}/'.format(model._devices[0])):]
            for p, g in model.param_to_grad.items()
            if str(p).startswith('gpu_{}/'.format(model._devices[0]))}


def check_train_net(model, devices, use_nccl):
    net = model.net.Proto()
    shared = model._shared_blobs
    check_placement(net, devices, shared)
    grads = template_grads(model)
    assert grads
    every_device = collections.Counter({('grad', d): 1 for d in devices})

    # A blob an op writes holds that device's own contribution.
    def local(op, blob):
        return collections.Counter({('grad', device_of(blob)): 1})

    reads = evaluate(net, {}, local)
    sums_seen = {g: [] for g in grads.values()}
    for index, op, seen in reads:
        if op.type in ('Copy', 'Sum', 'NCCLAllreduce'):
            continue
        for blob, value in seen.items():
            template = PREFIX.sub('', blob)
            if blob in shared or template not in sums_seen:
                continue
            # Every op reading a gradient without being part of its sum is
            # an update op: it must see every device's contribution.
            assert value == every_device, (op.type, blob, value)
            sums_seen[template].append(index)
    for grad, readers in sums_seen.items():
        assert len(readers) == len(devices), (grad, readers)

    nccl = [(i, op) for i, op in enumerate(net.op) if op.type == 'NCCLAllreduce']
    trees = [op for op in net.op if op.type in ('Sum', 'Copy') and
             any(PREFIX.sub('', b) in grads.values() for b in list(op.input) + list(op.output))]
    if len(devices) == 1:
        assert not nccl and not trees
        return
    if not use_nccl:
        assert not nccl
        # log2(n) levels of n/2^k pairs: n - 1 Copy + Sum pairs, n - 1 Copies back.
        assert len(trees) == len(grads) * 3 * (len(devices) - 1)
        return
    assert len(nccl) == len(grads)
    assert not [op for op in net.op if op.type in ('Allreduce', 'Broadcast')]
    first_use = {}
    template_ops = [op for op in net.op if device_of((list(op.output) or [''])[0]) ==
                    devices[0]]
    for position, op in enumerate(template_ops):
        for blob in op.input:
            first_use.setdefault(PREFIX.sub('', blob), position)
    grad_to_param = {g: p for p, g in grads.items()}
    order = []
    previous = None
    for index, op in nccl:
        grad = PREFIX.sub('', op.input[0])
        assert list(op.input) == ['gpu_{}/{}'.format(d, grad) for d in devices], op
        assert list(op.output) == list(op.input)
        # Backward ops write the gradient without reading it (updates do both).
        writers = [i for i, o in enumerate(net.op) if o.type != 'NCCLAllreduce' and
                   set(o.output) & set(op.input) and not set(o.input) & set(op.input)]
        assert writers and max(writers) < index, (grad, writers, index)
        order.append(first_use[grad_to_param[grad]])
        # Chained: concurrent NCCL launches may deadlock.
        if previous is not None:
            assert list(op.control_input) == [previous]
        previous = op.input[0]
    assert order == sorted(order, reverse=True), order


def check_init_net(model, devices, use_nccl):
    init = model.param_init_net.Proto()
    check_placement(init, devices, model._shared_blobs)

    def local(op, blob):
        return collections.Counter({('init', device_of(blob)): 1})

    state = {}
    evaluate(init, state, local)
    synced = [str(p) for p in model.params] + [str(p) for p in model._computed_params]
    assert synced
    for blob in synced:
        assert state[blob] == collections.Counter({('init', devices[0]): 1}), (blob,
                                                                               state[blob])
    broadcasts = [op for op in init.op if op.type == 'NCCLBroadcast']
    names = set(PREFIX.sub('', b) for b in synced)
    if len(devices) > 1 and use_nccl:
        assert sorted(PREFIX.sub('', op.input[0]) for op in broadcasts) == sorted(names)
        for op in broadcasts:
            blob = PREFIX.sub('', op.input[0])
            assert list(op.input) == ['gpu_{}/{}'.format(d, blob) for d in devices]
    else:
        assert not broadcasts
    assert not [op for op in init.op if op.type == 'Broadcast']


@pytest.mark.parametrize('model_name', sorted(MODELS))
@pytest.mark.parametrize('num_devices', DEVICE_COUNTS)
@pytest.mark.parametrize('use_nccl', [True, False])
def test_gpu_graph(model_name, num_devices, use_nccl):
    devices = list(range(num_devices))
    model = parallelize(MODELS[model_name], devices, use_nccl)
    assert model._device_prefixes == {d: 'gpu_{}/'.format(d) for d in devices}
    for name in PARAMS if model_name == 'mlp' else []:
        for d in devices:
            assert core.BlobReference('gpu_{}/{}'.format(d, name)) in model.params
    check_train_net(model, devices, use_nccl)
    check_init_net(model, devices, use_nccl)


def test_device_ids_need_not_start_at_zero():
    devices = [2, 5, 6]
    for use_nccl in (True, False):
        workspace.ResetWorkspace()
        optimizer.reset_optimizer_instance_count()
        model = parallelize(forward, devices, use_nccl)
        check_train_net(model, devices, use_nccl)
        check_init_net(model, devices, use_nccl)


def test_the_evaluator_catches_a_missing_contribution():
    """The symbolic check can fail: dropping one tree Sum leaves a device
    without another's gradient."""
    model = parallelize(forward, [0, 1], use_nccl=False)
    proto = model.net.Proto()
    index = next(i for i, op in enumerate(proto.op) if op.type == 'Sum' and
                 op.output[0].startswith('gpu_0/fc1_w_grad'))
    del proto.op[index]
    with pytest.raises(AssertionError):
        check_train_net(model, [0, 1], use_nccl=False)


@pytest.mark.skipif(workspace.NumCudaDevices() > 0, reason='needs a machine without CUDA')
def test_running_without_cuda_is_a_clear_error():
    model = parallelize(forward, [0, 1], use_nccl=True)
    with pytest.raises(RuntimeError, match=r'RunInitNet: .*CUDA devices \[0, 1\].*sees 0'):
        data_parallel_model.RunInitNet(model)
    with pytest.raises(RuntimeError, match='RunNet: .*CUDA'):
        data_parallel_model.RunNet(model, 1)
    # The nets themselves fail cleanly too, naming the first op and why it
    # cannot run (its CUDA kernel is linked; the device is missing).
    with pytest.raises(RuntimeError) as error:
        workspace.RunNetOnce(model.param_init_net)
    assert workspace.C.cuda_unavailable_reason() in str(error.value)
    assert 'while creating op #0' in str(error.value)


@pytest.mark.skipif(workspace.NumCudaDevices() > 0, reason='needs a machine without CUDA')
def test_nccl_ops_validate_and_fail_cleanly_without_a_gpu():
    for op_type in ('NCCLAllreduce', 'NCCLBroadcast', 'NCCLReduce', 'NCCLAllGather',
                    'NCCLReduceScatter'):
        info = workspace.C.schema(op_type)
        assert info['min_input'] == 1 and info['max_input'] == 16
        workspace.ResetWorkspace()
        workspace.FeedBlob('a', [1.0])
        workspace.FeedBlob('b', [2.0])
        outputs = {'NCCLReduce': ['r'], 'NCCLAllGather': ['x', 'y'],
                   'NCCLReduceScatter': ['x', 'y']}.get(op_type, ['a', 'b'])
        on_gpu = core.CreateOperator(op_type, ['a', 'b'], outputs,
                                     device_option=core.DeviceOption(doppio_pb2.CUDA, 0))
        # The CUDA kernels are linked; without a GPU the op names itself and
        # why no device is usable.
        with pytest.raises(RuntimeError, match="(?s)no CUDA device.*in operator {}".format(
                op_type)) as failure:
            workspace.RunOperatorOnce(on_gpu)
        assert workspace.C.cuda_unavailable_reason() in str(failure.value)
        on_cpu = core.CreateOperator(op_type, ['a', 'b'], outputs)
        with pytest.raises(RuntimeError, match="'{}'.*CUDA devices only".format(op_type)):
            workspace.RunOperatorOnce(on_cpu)


def test_gpu_refusals():
    with pytest.raises(ValueError, match='shared_model'):
        data_parallel_model.Parallelize_GPU(
            model_helper.ModelHelper(name='shared_gpu'), lambda m: None, forward,
            optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1), devices=[0, 1],
            shared_model=True)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
