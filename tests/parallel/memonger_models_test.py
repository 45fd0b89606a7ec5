"""End to end: memonger-optimized training nets compute exactly what the
unoptimized ones compute. For the reference CNN, a ResNet-style net (8
residual blocks) and an inception-style net, three momentum-SGD steps on
fixed data give bit-identical losses, parameters, momenta and BN statistics
with and without doppio.memonger.share_grad_blobs (gradients only, and
gradients plus activations), under the simple and the dag executor, and
through Parallelize_CPU(optimize_gradient_memory=True) on 1 and 2 devices.

The rewrite itself is checked independently of the memonger: the ops stay
the same, no protected blob (parameter, parameter gradient, loss, external
input/output, blob the net reads before writing) is renamed or reused, each
renamed blob maps to one "{namescope}__m{N}_shared" blob, blobs that share
one are ordered by the original net's dependencies (so no schedule of the
dag executor can have two of them live at once), and there are fewer
distinct blobs than before. The unoptimized net is the reference.
"""
import functools
import re
import sys
import zlib

import numpy as np
import pytest

from doppio import data_parallel_model, memonger, model_helper, optimizer, workspace
from python_api.examples import fmnist_train, memonger_models

BATCH = 4
STEPS = 3
LR = 0.05
MOMENTUM = 0.9
DAG_WORKERS = 2
NUM_CLASSES = 10


def reference_cnn(model, loss_scale):
    softmax = fmnist_train.add_reference_cnn(model, 'data', is_test=0)
    loss = fmnist_train.add_loss_and_accuracy(model, softmax, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def resnet(model, loss_scale):
    logits = memonger_models.add_resnet_style(model, 'data', num_blocks=8, channels=8)
    _, loss = memonger_models.add_softmax_loss(model, logits, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


def inception(model, loss_scale):
    logits = memonger_models.add_inception_style(model, 'data')
    _, loss = memonger_models.add_softmax_loss(model, logits, 'label')
    return [model.net.Scale(loss, 'scaled_loss', scale=loss_scale)]


# name -> (forward builder, input shape [C, H, W])
MODELS = {
    'reference_cnn': (reference_cnn, (1, 28, 28)),
    'resnet': (resnet, (3, 16, 16)),
    'inception': (inception, (3, 16, 16)),
}


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def add_sgd(model):
    return optimizer.build_sgd(model, base_learning_rate=LR, policy='fixed',
                               momentum=MOMENTUM, nesterov=False)


def initial_value(name, shape):
    """Fixed initial parameter values, a function of the (unscoped) name, so
    every run and every device starts from the same point."""
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    if len(shape) > 1:
        bound = 1.0 / np.sqrt(np.prod(shape[1:]))
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    if name.endswith('_s'):  # SpatialBN scale
        return (1.0 + 0.1 * rng.randn(*shape)).astype(np.float32)
    return (0.1 * rng.randn(*shape)).astype(np.float32)


def batches(model_name, batch):
    shape = MODELS[model_name][1]
    rng = np.random.RandomState(11)
    return [(rng.randn(batch, *shape).astype(np.float32),
             rng.randint(0, NUM_CLASSES, size=batch).astype(np.int32))
            for _ in range(STEPS)]


def with_executor(net_proto, net_type):
    proto = type(net_proto)()
    proto.CopyFrom(net_proto)
    proto.type = net_type
    del proto.arg[:]
    proto.arg.extend(a for a in net_proto.arg if a.name != 'num_workers')
    if net_type == 'dag':
        proto.arg.add(name='num_workers', i=DAG_WORKERS)
    return proto


# ---- independent checks of the rewrite ----

def reads_before_writes(net_proto):
    """Blobs some op reads before any op of the net writes them: workspace
    state the net depends on (params, momenta, BN statistics, data)."""
    written, result = set(), set()
    for op in net_proto.op:
        result.update(b for b in op.input if b not in written)
        written.update(op.output)
    return result


def ancestors(net_proto):
    """For each op, the set (a bit mask) of ops that must finish before it
    starts in any schedule: read-after-write, write-after-write and
    write-after-read edges of the original net, closed transitively."""
    last_writer, readers_since = {}, {}
    masks = []
    for i, op in enumerate(net_proto.op):
        mask = 0
        for b in list(op.input) + list(op.control_input):
            if b in last_writer:
                mask |= masks[last_writer[b]] | (1 << last_writer[b])
        for b in op.output:
            if b in last_writer and last_writer[b] != i:
                mask |= masks[last_writer[b]] | (1 << last_writer[b])
            for r in readers_since.get(b, ()):
                if r != i:
                    mask |= masks[r] | (1 << r)
        masks.append(mask)
        for b in op.output:
            last_writer[b] = i
            readers_since[b] = []
        for b in op.input:
            readers_since.setdefault(b, []).append(i)
    return masks


def check_rewrite(original, optimized, protected, namescope_pattern):
    """Asserts the properties in the module doc; returns the renaming."""
    assert len(optimized.op) == len(original.op)
    renamed = {}
    for i, (before, after) in enumerate(zip(original.op, optimized.op)):
        assert after.type == before.type, i
        assert len(after.input) == len(before.input) and \
            len(after.output) == len(before.output), (i, before.type)
        for old, new in list(zip(before.input, after.input)) + \
                list(zip(before.output, after.output)):
            if old in protected:
                assert new == old, 'protected blob {} renamed to {} at op #{} {}'.format(
                    old, new, i, before.type)
                continue
            assert new not in protected, 'blob {} shares protected blob {} at op #{} {}'.format(
                old, new, i, before.type)
            if new != old:
                assert renamed.setdefault(old, new) == new, \
                    'blob {} renamed both {} and {}'.format(old, renamed[old], new)
    shared_name = re.compile(r'^{}__m\d+_shared$'.format(namescope_pattern))
    groups = {}
    for old, new in renamed.items():
        assert shared_name.match(new), 'blob {} renamed to {}'.format(old, new)
        groups.setdefault(new, []).append(old)
    original_names = {b for op in original.op for b in list(op.input) + list(op.output)}
    for new, olds in groups.items():
        assert new not in original_names, new
    # Blobs in a group must be ordered by the original net's dependencies:
    # every op touching one finishes before any op touching the next starts
    # (an op may read one member and write the next, i.e. become in-place).
    masks = ancestors(original)
    touching = {}
    for i, op in enumerate(original.op):
        for b in set(op.input) | set(op.output):
            touching.setdefault(b, []).append(i)
    for new, olds in groups.items():
        olds.sort(key=lambda b: touching[b][0])
        for a, b in zip(olds, olds[1:]):
            for j in touching[b]:
                for i in touching[a]:
                    if i == j:
                        op = original.op[i]
                        assert a in op.input and a not in op.output and \
                            b in op.output and b not in op.input, \
                            '{} and {} share {} but op #{} {} uses both'.format(
                                a, b, new, i, op.type)
                    else:
                        assert masks[j] >> i & 1, (
                            '{} and {} share {}, but op #{} {} (uses {}) is not ordered '
                            'before op #{} {} (uses {})'.format(
                                a, b, new, i, original.op[i].type, a, j,
                                original.op[j].type, b))
    optimized_names = {b for op in optimized.op for b in list(op.input) + list(op.output)}
    assert len(optimized_names) < len(original_names)
    return renamed


# ---- one net ----

def build_single(model_name):
    forward = MODELS[model_name][0]
    model = model_helper.ModelHelper(name='memonger_' + model_name)
    losses = forward(model, 1.0)
    model.AddGradientOperators(losses)
    add_sgd(model)
    param_grads = [str(model.param_to_grad[p]) for p in model.params]
    return model, [str(b) for b in losses], param_grads


def train_single(model, net_proto, model_name, losses):
    """Three steps from fixed params on fixed data; returns (losses per
    step, every blob the net reads before writing, after training)."""
    workspace.ResetWorkspace()
    workspace.RunNetOnce(model.param_init_net)
    for p in model.params:
        workspace.FeedBlob(str(p), initial_value(str(p), workspace.FetchBlob(str(p)).shape))
    data = batches(model_name, BATCH)
    workspace.FeedBlob('data', data[0][0])
    workspace.FeedBlob('label', data[0][1])
    workspace.CreateNet(net_proto, overwrite=True)
    step_losses = []
    for x, y in data:
        workspace.FeedBlob('data', x)
        workspace.FeedBlob('label', y)
        workspace.RunNet(net_proto.name)
        step_losses.append([workspace.FetchBlob(b).copy() for b in losses])
    return step_losses, fetch_state(net_proto, ('data', 'label'))


def fetch_state(net_proto, inputs):
    """Every tensor the net reads before writing it (params, momenta, BN
    statistics, the iteration counter ...) but the fed inputs; mutexes and
    other non-tensor blobs are left out."""
    state = {}
    for name in reads_before_writes(net_proto) - set(inputs):
        value = workspace.FetchBlob(name)
        # Non-tensor blobs fetch as a description (bytes).
        if not isinstance(value, bytes):
            state[name] = value.copy()
    return state


def assert_same_training(reference, result):
    ref_losses, ref_state = reference
    losses, state = result
    for step, (expected, got) in enumerate(zip(ref_losses, losses)):
        for e, g in zip(expected, got):
            assert np.isfinite(e).all()
            np.testing.assert_array_equal(g, e, err_msg='loss at step {}'.format(step))
    assert sorted(state) == sorted(ref_state)
    for name in ref_state:
        np.testing.assert_array_equal(state[name], ref_state[name], err_msg=name)


@functools.lru_cache(maxsize=None)
def unoptimized_run(model_name, net_type):
    optimizer.reset_optimizer_instance_count()
    model, losses, _ = build_single(model_name)
    return train_single(model, with_executor(model.net.Proto(), net_type), model_name, losses)


@pytest.mark.parametrize('share_activations', [False, True])
@pytest.mark.parametrize('net_type', ['simple', 'dag'])
@pytest.mark.parametrize('model_name', sorted(MODELS))
def test_share_grad_blobs_trains_identically(model_name, net_type, share_activations):
    reference = unoptimized_run(model_name, net_type)
    optimizer.reset_optimizer_instance_count()
    model, losses, param_grads = build_single(model_name)
    original = model.net.Proto()
    before = original.SerializeToString()
    optimized = memonger.share_grad_blobs(original, losses, param_grads, '',
                                          share_activations=share_activations)
    assert original.SerializeToString() == before, 'share_grad_blobs changed its input'
    protected = (set(str(p) for p in model.params) | set(param_grads) | set(losses) |
                 set(original.external_input) | set(original.external_output) |
                 reads_before_writes(original))
    renamed = check_rewrite(original, optimized, protected, '')
    if not share_activations:
        # Only gradients may be shared, not what the forward pass computes.
        gradients = {str(g) for g in model.grad_map.values()}
        forward_outputs = set()
        for op in original.op:
            if op.is_gradient_op:
                break
            forward_outputs.update(set(op.output) - gradients)
        assert not forward_outputs & set(renamed), sorted(forward_outputs & set(renamed))
    assert_same_training(reference, train_single(model, with_executor(optimized, net_type),
                                                 model_name, losses))


# ---- Parallelize(optimize_gradient_memory=True) ----

def train_parallel(model_name, num_devices, optimize):
    """Three steps of the data-parallel model (dag executor, 2 workers per
    device), each device fed its own fixed batch; returns the model, the
    losses per step and device, and the state the net reads."""
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    model = model_helper.ModelHelper(name='memonger_dp_{}_{}'.format(model_name, optimize))
    devices = list(range(num_devices))
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=MODELS[model_name][0], optimizer_builder_fun=add_sgd,
        devices=devices, num_threads_per_device=DAG_WORKERS,
        optimize_gradient_memory=optimize)
    data_parallel_model.RunInitNet(model)
    prefix = 'cpu_0/'
    for p in model.params:
        name = str(p)
        if name.startswith(prefix):
            workspace.FeedBlob(name, initial_value(name[len(prefix):],
                                                   workspace.FetchBlob(name).shape))
    data_parallel_model.FinalizeAfterCheckpoint(model)
    data = batches(model_name, BATCH * num_devices)
    step_losses = []
    for x, y in data:
        for d in devices:
            rows = slice(d * BATCH, (d + 1) * BATCH)
            workspace.FeedBlob('cpu_{}/data'.format(d), x[rows])
            workspace.FeedBlob('cpu_{}/label'.format(d), y[rows])
        data_parallel_model.RunNet(model, 1)
        step_losses.append([workspace.FetchBlob('cpu_{}/scaled_loss'.format(d)).copy()
                            for d in devices])
    inputs = ['cpu_{}/{}'.format(d, b) for d in devices for b in ('data', 'label')]
    return model, (step_losses, fetch_state(model.net.Proto(), inputs))


@pytest.mark.parametrize('num_devices', [1, 2])
@pytest.mark.parametrize('model_name', sorted(MODELS))
def test_parallelize_optimize_gradient_memory_trains_identically(model_name, num_devices):
    plain, reference = train_parallel(model_name, num_devices, optimize=False)
    optimized, result = train_parallel(model_name, num_devices, optimize=True)
    assert optimized.net.Proto().type == 'dag'
    original_proto = plain.net.Proto()
    protected = (set(str(p) for p in plain.params) |
                 set(str(g) for g in plain.param_to_grad.values()) |
                 {'cpu_{}/scaled_loss'.format(d) for d in range(num_devices)} |
                 set(original_proto.external_input) | set(original_proto.external_output) |
                 reads_before_writes(original_proto))
    renamed = check_rewrite(original_proto, optimized.net.Proto(), protected,
                            r'cpu_\d+/')
    # Each device's blobs share only that device's pool.
    for old, new in renamed.items():
        assert old.split('/')[0] == new.split('/')[0], (old, new)
    assert_same_training(reference, result)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
