"""Gradient accumulation (Parallelize accumulate_steps=K, issue 26): each
RunNet reads K micro-batches from a DB reader, sums their gradients and
reduces and updates once. K micro-batches of B records train the MLP to the
params of one K*B batch per step (on one device and on two), which K=1 with
batch B does not; the reader really advances K batches per step; the plan
says so; sparse gradients are refused."""
import struct
import sys

import numpy as np
import pytest

from doppio import data_parallel_model, model_helper, optimizer, workspace
from doppio.proto import doppio_pb2

from mlp_fixture import D_IN, D_OUT, PARAMS, forward, fresh_workspace, initial_params  # noqa: F401

RECORDS = 120
STEPS = 4
LR, MOMENTUM = 0.2, 0.9


@pytest.fixture(scope='module')
def db(tmp_path_factory):
    """RECORDS (float32 [D_IN] features, int32 label) TensorProtos records in
    the minidb layout (int32 key length, int32 value length, key, value)."""
    path = str(tmp_path_factory.mktemp('accumulate') / 'train.minidb')
    rng = np.random.RandomState(11)
    with open(path, 'wb') as f:
        for i in range(RECORDS):
            record = doppio_pb2.TensorProtos()
            x = record.protos.add()
            x.data_type = doppio_pb2.TensorProto.FLOAT
            x.dims.extend([D_IN])
            x.float_data.extend(rng.randn(D_IN).astype(np.float32).tolist())
            y = record.protos.add()
            y.data_type = doppio_pb2.TensorProto.INT32
            y.int32_data.append(int(rng.randint(0, D_OUT)))
            key, value = ('%06d' % i).encode(), record.SerializeToString()
            f.write(struct.pack('<ii', len(key), len(value)) + key + value)
    return path


def train(db, devices, batch_per_device, accumulate_steps, name, steps=STEPS, **options):
    """Device 0's params after `steps` steps from the fixture's initial
    params (and every device's as 'cpu_d/param'); also the model."""
    model = model_helper.ModelHelper(name=name)
    if devices == 1:
        reader = model.param_init_net.CreateDB([], 'reader_' + name, db=db, db_type='minidb')
    else:
        # A reader per device (made by the input builder, so replicated):
        # every device reads the same records in order. One reader shared by
        # prefetching ops would hand records to the devices in a timing-
        # dependent order, and a step's records would vary from run to run.
        reader = None

    def add_input(m):
        source = reader or m.param_init_net.CreateDB([], 'reader', db=db, db_type='minidb')
        m.net.TensorProtosDBInput([source], ['data', 'label'], batch_size=batch_per_device)

    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=add_input, forward_pass_builder_fun=forward,
        optimizer_builder_fun=lambda m: optimizer.build_sgd(m, LR, momentum=MOMENTUM),
        devices=list(range(devices)), accumulate_steps=accumulate_steps, **options)
    workspace.RunNetOnce(model.param_init_net)
    for d in range(devices):
        for p, value in initial_params().items():
            workspace.FeedBlob('cpu_%d/%s' % (d, p), value)
    workspace.CreateNet(model.net)
    for _ in range(steps):
        workspace.RunNet(model.net)
    params = {p: workspace.FetchBlob('cpu_0/' + p) for p in PARAMS}
    for d in range(devices):
        params.update({'cpu_%d/%s' % (d, p): workspace.FetchBlob('cpu_%d/%s' % (d, p))
                       for p in PARAMS})
    return params, model


def assert_params_close(actual, expected):
    for p in PARAMS:
        np.testing.assert_allclose(actual[p], expected[p], rtol=2e-5, atol=2e-6, err_msg=p)


@pytest.mark.parametrize('devices', [1, 2])
def test_micro_batches_equal_one_larger_batch(db, devices):
    accumulate, micro = 3, 2
    # Two devices read the same records (a reader each), so their global
    # batch has the records of one device's, twice: the same mean.
    whole_batch = accumulate * micro
    reference, _ = train(db, 1, whole_batch, 1, 'whole_%d' % devices)
    accumulated, model = train(db, devices, micro, accumulate, 'accumulated_%d' % devices)
    assert_params_close(accumulated, reference)
    # The check can fail: one micro-batch per step trains elsewhere.
    single, _ = train(db, devices, micro, 1, 'single_%d' % devices)
    assert max(np.abs(single[p] - reference[p]).max() for p in PARAMS) > 1e-3
    # Every replica ends equal.
    if devices == 2:
        for p in PARAMS:
            np.testing.assert_array_equal(accumulated['cpu_1/' + p], accumulated[p])
    plan = model._parallel_plan
    assert plan.accumulate_steps == accumulate
    assert 'forward and backward 3 times per step' in str(plan)
    assert plan.accumulators['fc1_w_grad'] == 'fc1_w_grad_accumulated'


def records():
    """The features of every record of the db fixture, in order."""
    rng = np.random.RandomState(11)
    features = []
    for _ in range(RECORDS):
        features.append(rng.randn(D_IN).astype(np.float32))
        rng.randint(0, D_OUT)
    return np.array(features)


def test_the_reader_advances_k_batches_per_step(db):
    # After 2 steps of 3 micro-batches of 4, the last micro-batch read is
    # records 20..23: consecutive batches, 3 per step.
    _, model = train(db, 1, 4, 3, 'reader_count', steps=2)
    np.testing.assert_array_equal(workspace.FetchBlob('cpu_0/data'), records()[20:24])
    # One reader op, run 3 times per step inside the micro-step loop (one
    # instance: its prefetched batch is the next micro-batch).
    loops = [op for op in model.net.Proto().op if op.type == 'While']
    assert len(loops) == 1
    body = [a.n for a in loops[0].arg if a.name == 'loop_net'][0]
    assert [op.type for op in body.op].count('TensorProtosDBInput') == 1
    assert not [op for op in model.net.Proto().op if op.type == 'TensorProtosDBInput']


@pytest.mark.parametrize('memory', ['optimize_gradient_memory', 'dynamic_memory_management'])
def test_memory_options_keep_the_accumulated_step(db, memory):
    """The memonger and the Free ops after last use see the micro-step loop
    through the blobs the While op names (its condition's limit included:
    a Free of it after the first check broke the loop)."""
    plain, _ = train(db, 2, 2, 3, 'memory_plain')
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    with_memory, _ = train(db, 2, 2, 3, 'memory_' + memory, **{memory: True})
    for p in PARAMS:
        np.testing.assert_array_equal(with_memory[p], plain[p], err_msg=p)


def test_bad_accumulate_steps_are_refused():
    model = model_helper.ModelHelper(name='bad_accumulate')
    with pytest.raises(Exception, match='accumulate_steps must be >= 1'):
        data_parallel_model.Parallelize_CPU(
            model, input_builder_fun=lambda m: None, forward_pass_builder_fun=forward,
            optimizer_builder_fun=lambda m: optimizer.build_sgd(m, LR), devices=[0],
            accumulate_steps=0)


def test_sparse_gradients_with_accumulation_are_refused():
    model = model_helper.ModelHelper(name='sparse_accumulate')

    def embedding(m, loss_scale):
        table = m.create_param('emb', [6, 3], model_helper.Initializer('XavierFill'))
        rows = m.net.Gather([table, 'ids'], 'rows')
        loss = m.net.SumElements(rows, 'loss')
        return [m.net.Scale(loss, 'scaled', scale=loss_scale)]

    with pytest.raises(NotImplementedError, match="accumulate_steps 2 with sparse gradients.*'emb'"):
        data_parallel_model.Parallelize_CPU(
            model, input_builder_fun=lambda m: None, forward_pass_builder_fun=embedding,
            optimizer_builder_fun=lambda m: optimizer.build_sgd(m, LR), devices=[0],
            accumulate_steps=2)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
