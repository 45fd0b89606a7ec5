"""The typed boundary of the Parallelize pass: one ParallelizeRequest in
(the template and every option), one Parallelized out (nets, gradient maps,
the replicas' prefixes, the plan). The request is built here by hand from
protos, as any front end would, and the answer is checked against what the
template says; data_parallel_model must use the same answer."""
import sys

import pytest

from doppio import data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

from mlp_fixture import forward  # noqa: F401


def op(op_type, inputs, outputs, **ints):
    proto = doppio_pb2.OperatorDef(type=op_type, input=inputs, output=outputs)
    for name, value in ints.items():
        arg = proto.arg.add(name=name)
        if isinstance(value, list):
            arg.ints.extend(value)
        else:
            arg.i = value
    return proto


def template_request(devices, device_type=doppio_pb2.CPU):
    """x [2,3] -> FC(w, b) -> SquaredL2Distance to target -> AveragedLoss."""
    init = doppio_pb2.NetDef(name='init', op=[
        op('XavierFill', [], ['w'], shape=[4, 3]), op('ConstantFill', [], ['b'], shape=[4])])
    net = doppio_pb2.NetDef(name='train', op=[
        op('FC', ['x', 'w', 'b'], ['y']),
        op('SquaredL2Distance', ['y', 'target'], ['dist']),
        op('AveragedLoss', ['dist'], ['loss'])])
    request = workspace.C.ParallelizeRequest()
    request.model.param_init_net = init.SerializeToString()
    request.model.net = net.SerializeToString()
    request.model.param_update_net = doppio_pb2.NetDef(name='update').SerializeToString()
    request.model.losses = ['loss']
    request.model.params = ['w', 'b']
    request.options.devices = devices
    request.options.device_type = device_type
    return request


def test_one_request_one_result():
    result = workspace.C.parallelize(template_request([0, 2]))
    assert result.plan.prefixes == ['cpu_0/', 'cpu_2/']
    assert result.param_to_grad == {'w': 'w_grad', 'b': 'b_grad'}
    assert result.sparse_param_to_grad == {}
    assert result.device_param_to_grad == [
        {'cpu_0/w': 'cpu_0/w_grad', 'cpu_0/b': 'cpu_0/b_grad'},
        {'cpu_2/w': 'cpu_2/w_grad', 'cpu_2/b': 'cpu_2/b_grad'}]
    net = doppio_pb2.NetDef()
    net.ParseFromString(result.net)
    summed = [list(o.input) for o in net.op if o.type == 'Allreduce']
    assert sorted(summed) == [['cpu_0/b_grad', 'cpu_2/b_grad'], ['cpu_0/w_grad', 'cpu_2/w_grad']]
    # The plan names each sum after the op that enables it.
    reductions = result.plan.reductions
    assert sorted(b for r in reductions for b in r['blobs']) == ['b_grad', 'w_grad']
    for row in reductions:
        assert row['kind'] == 'gradients'
        assert row['op_type'].endswith('Gradient')
    assert result.plan.init_broadcasts == ['w', 'b']
    text = str(result.plan)
    assert 'replicas: cpu_0/, cpu_2/' in text and 'init broadcasts: w, b' in text


def test_the_pass_owns_naming_and_checks():
    assert workspace.C.device_prefix(doppio_pb2.CUDA, 3) == 'gpu_3/'
    assert workspace.C.device_prefix_of(doppio_pb2.CPU, 'cpu_12/x') == 'cpu_12/'
    assert workspace.C.device_prefix_of(doppio_pb2.CPU, 'x') == ''
    request = template_request([0], doppio_pb2.CUDA)
    request.options.shared_model = True
    # Errors keep their kind across the boundary.
    with pytest.raises(ValueError, match='shared_model is only supported on CPU'):
        workspace.C.parallelize(request)
    request = template_request([0, 1])
    request.options.rendezvous.num_shards = 2
    request.options.rendezvous.kv_handler = 'store'
    request.options.rendezvous.engine = 'MPI'
    with pytest.raises(NotImplementedError, match="engine 'MPI'"):
        workspace.C.validate_parallelize_options(request.options)
    request.model.losses = ['not_a_blob']
    request.options.rendezvous.num_shards = 1
    with pytest.raises(RuntimeError, match="loss 'not_a_blob' is not produced"):
        workspace.C.parallelize(request)
    with pytest.raises(RuntimeError, match='cannot parse the net NetDef'):
        request.model.net = b'\xff\xff'


def test_data_parallel_model_keeps_the_plan():
    model = model_helper.ModelHelper(name='dp_plan')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, 0.1), devices=[1, 0])
    plan = model._parallel_plan
    assert plan.prefixes == ['cpu_1/', 'cpu_0/']
    assert 'optimizer_iteration' in plan.shared
    grads = sorted(b for r in plan.reductions for b in r['blobs'])
    assert grads == sorted(str(g)[len('cpu_1/'):] for p, g in model.param_to_grad.items()
                           if str(p).startswith('cpu_1/'))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rs"]))
