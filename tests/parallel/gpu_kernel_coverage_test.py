"""Every op that Parallelize_GPU places on a GPU has a CUDA kernel: the
reference MLP and CNN, with each optimizer builder (momentum SGD, plain SGD,
Adam), with and without NCCL, on 1 and 2 devices; a model with a sparse
(GradientSlice) embedding gradient under momentum SGD, plain SGD and
Adagrad; and dynamic_memory_management (Free on the GPU). Checked through the
operator registry, so no GPU is needed: without this, a model could build
its nets here and only fail, op by op, on the first machine with a GPU."""
import sys

import pytest

from doppio import _C, brew, data_parallel_model, model_helper, optimizer
from doppio.proto import doppio_pb2
from python_api.examples import fmnist_train

# fresh_workspace: the autouse fixture that resets the workspace per test.
from mlp_fixture import forward, fresh_workspace  # noqa: F401


def reference_cnn(model, loss_scale):
    softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


MODELS = {'mlp': forward, 'cnn': reference_cnn}
OPTIMIZERS = {
    'momentum_sgd': lambda m: optimizer.build_sgd(m, 0.05, momentum=0.9),
    'sgd': lambda m: optimizer.build_sgd(m, 0.05),
    'adam': lambda m: optimizer.build_adam(m, 0.001),
}


def cuda_engines(op_type):
    """The engines op_type has a CUDA kernel under ('' is the default)."""
    return {engine for device, engine in _C.registered_operator_devices(op_type)
            if device == 'CUDA'}


def has_cuda_kernel(op):
    """As CreateOperator resolves it: one of the def's engines (a
    comma-separated preference list), else the default engine."""
    engines = cuda_engines(op.type)
    wanted = [e.strip() for e in op.engine.split(',') if e.strip()] + ['']
    return any(engine in engines for engine in wanted)


def gpu_ops_without_kernel(model):
    missing = set()
    for net in (model.param_init_net.Proto(), model.net.Proto()):
        for op in net.op:
            if op.device_option.device_type == doppio_pb2.CUDA and not has_cuda_kernel(op):
                missing.add(op.type)
    return missing


def sparse_embedding(model, loss_scale):
    """An embedding table read by Gather: its gradient is a GradientSlice,
    which Parallelize_GPU Concats across devices."""
    table = model.create_param('table', [12, 3], model_helper.Initializer('XavierFill'))
    rows = model.net.Gather([table, 'ids'], 'rows')
    logits = brew.fc(model, rows, 'fc', 3, 4)
    _, loss = model.net.SoftmaxWithLoss([logits, 'label'], ['softmax', 'avg_loss'])
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


MODELS['sparse'] = sparse_embedding
# Sparse gradients: SparseMomentumSGDUpdate (with and without momentum) and
# SparseAdagrad.
SPARSE_OPTIMIZERS = {
    'momentum_sgd': OPTIMIZERS['momentum_sgd'],
    'sgd': OPTIMIZERS['sgd'],
    'adagrad': lambda m: optimizer.build_adagrad(m, 0.05),
}


def parallelize(model_name, optimizer_name, num_devices, use_nccl, **kwargs):
    model = model_helper.ModelHelper(name='coverage_{}_{}_{}_{}'.format(
        model_name, optimizer_name, num_devices, use_nccl))
    optimizers = SPARSE_OPTIMIZERS if model_name == 'sparse' else OPTIMIZERS
    data_parallel_model.Parallelize_GPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=MODELS[model_name],
        optimizer_builder_fun=optimizers[optimizer_name],
        devices=list(range(num_devices)), use_nccl=use_nccl, **kwargs)
    return model


def gpu_op_types(model):
    return {op.type for net in (model.param_init_net.Proto(), model.net.Proto())
            for op in net.op if op.device_option.device_type == doppio_pb2.CUDA}


@pytest.mark.parametrize('use_nccl', [True, False])
@pytest.mark.parametrize('num_devices', [1, 2])
@pytest.mark.parametrize('optimizer_name', sorted(OPTIMIZERS))
@pytest.mark.parametrize('model_name', ['cnn', 'mlp'])
def test_every_gpu_op_has_a_cuda_kernel(model_name, optimizer_name, num_devices, use_nccl):
    model = parallelize(model_name, optimizer_name, num_devices, use_nccl)
    gpu_types = gpu_op_types(model)
    # The nets really are GPU nets: the layers, the loss and the updates.
    assert {'FC', 'FCGradient', 'Scale'} <= gpu_types, gpu_types
    assert gpu_ops_without_kernel(model) == set()


SPARSE_UPDATE = {'momentum_sgd': 'SparseMomentumSGDUpdate', 'sgd': 'SparseMomentumSGDUpdate',
                 'adagrad': 'SparseAdagrad'}


@pytest.mark.parametrize('use_nccl', [True, False])
@pytest.mark.parametrize('num_devices', [1, 2, 3])
@pytest.mark.parametrize('optimizer_name', sorted(SPARSE_OPTIMIZERS))
def test_sparse_gradients_have_cuda_kernels(optimizer_name, num_devices, use_nccl):
    model = parallelize('sparse', optimizer_name, num_devices, use_nccl)
    gpu_types = gpu_op_types(model)
    # The sparse path really is on the GPU: the gather, the sparse update and,
    # across devices, the Concat of every device's slice.
    expected = {'Gather', SPARSE_UPDATE[optimizer_name]}
    if num_devices > 1:
        expected.add('Concat')
    assert expected <= gpu_types, gpu_types
    assert gpu_ops_without_kernel(model) == set()


@pytest.mark.parametrize('model_name', sorted(MODELS))
def test_dynamic_memory_management_frees_on_the_gpu(model_name):
    model = parallelize(model_name, 'sgd', 2, False, dynamic_memory_management=True)
    assert 'Free' in gpu_op_types(model)
    assert gpu_ops_without_kernel(model) == set()


def test_the_learning_rate_stays_on_the_host():
    """The CUDA update ops are fed a CPU learning rate (their kernels take it
    by value): the case they must handle."""
    model = parallelize('mlp', 'momentum_sgd', 2, True)
    net = model.net.Proto()
    producers = {out: op for op in net.op for out in op.output}
    updates = [op for op in net.op if op.type == 'MomentumSGDUpdate']
    assert len(updates) == 2 * 4
    for op in updates:
        assert op.device_option.device_type == doppio_pb2.CUDA
        lr_producer = producers[op.input[2]]
        assert lr_producer.type == 'LearningRate'
        assert lr_producer.device_option.device_type == doppio_pb2.CPU


def test_the_check_sees_a_missing_kernel():
    """The check can fail: an op type with only a CPU kernel
    (SquaredL2Distance), placed on the GPU, is reported."""
    assert 'CUDA' not in {d for d, _ in _C.registered_operator_devices('SquaredL2Distance')}
    model = parallelize('mlp', 'sgd', 1, False)
    op = model.net.Proto().op.add()
    op.type = 'SquaredL2Distance'
    op.input.extend(['gpu_0/a', 'gpu_0/b'])
    op.output.extend(['gpu_0/d'])
    op.device_option.device_type = doppio_pb2.CUDA
    assert gpu_ops_without_kernel(model) == {'SquaredL2Distance'}
    # An engine preference falls back to the default engine, as in
    # CreateOperator.
    assert has_cuda_kernel(doppio_pb2.OperatorDef(type='Conv', engine='NOPE,CUDNN'))
    assert has_cuda_kernel(doppio_pb2.OperatorDef(type='Relu', engine='CUDNN'))


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
