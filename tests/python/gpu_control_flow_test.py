"""Control flow, recurrent networks and the ops Caffe2's sequence models use,
built under a GPU device scope as a Caffe2 program builds them: every op of
the net (the subnets' too) carries a CUDA device option, the inputs are fed
to the GPU, and the results must equal the same program on the CPU.

The CPU results are checked against numpy and finite differences by
control_ops_test.py and rnn_cell_test.py; this file checks that the GPU gives
the same. Without a GPU every case is skipped, saying why."""
import sys
import zlib

import numpy as np
import pytest

from doppio import core, gru_cell, model_helper, rnn_cell, workspace
from doppio.net_builder import NetBuilder, ops
from doppio.proto import doppio_pb2

from control_flow_nets import adder_net, all_ops, squaring_loop

NUM_GPUS = workspace.NumCudaDevices()
pytestmark = pytest.mark.skipif(
    NUM_GPUS == 0, reason='needs a CUDA GPU: ' + (workspace.CudaUnavailableReason() or 'none'))

CPU = core.DeviceOption(doppio_pb2.CPU)
GPU = core.DeviceOption(doppio_pb2.CUDA, 0)


def run_on(device, build, feeds, fetches):
    """Builds the nets under `device`'s scope, feeds `feeds` to that device,
    runs them in order and fetches `fetches` (to the host)."""
    workspace.ResetWorkspace()
    with core.DeviceScope(device):
        nets = build()
    for name, value in feeds.items():
        workspace.FeedBlob(name, np.asarray(value), device_option=device)
    for net in nets:
        if device.device_type == doppio_pb2.CUDA:
            off = [(name, op.type) for name, op in all_ops(net.Proto())
                   if op.device_option.device_type != doppio_pb2.CUDA]
            assert net.Proto().op and off == [], off
        workspace.RunNetOnce(net)
    return [workspace.FetchBlob(str(name)) for name in fetches]


def assert_gpu_equals_cpu(build, feeds, fetches, rtol=1e-5, atol=1e-6):
    cpu = run_on(CPU, build, feeds, fetches)
    gpu = run_on(GPU, build, feeds, fetches)
    for name, c, g in zip(fetches, cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape, name
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, err_msg=str(name))
    workspace.ResetWorkspace()
    return cpu


def test_do_and_its_gradient():
    def build():
        net = core.Net('do_grad')
        net.CreateScope([], 'W')
        net.Do(['outer_X', 'outer_Y', 'W'], ['outer_Z', 'W'], net=adder_net().Proto(),
               inner_blobs=['X', 'Y', 'Z'], outer_blobs_idx=[0, 1, 2])
        net.SumElements('outer_Z', 'loss')
        net.AddGradientOperators(['loss'])
        return [net]
    x, y = np.float32([0.5, -1.5]), np.float32([2.0, 3.0])
    z, dx, dy = assert_gpu_equals_cpu(build, dict(outer_X=x, outer_Y=y),
                                      ['outer_Z', 'outer_X_grad', 'outer_Y_grad'])
    np.testing.assert_allclose(z, (x + y) * y, rtol=1e-6)
    np.testing.assert_allclose(dx, y, rtol=1e-6)
    np.testing.assert_allclose(dy, x + 2 * y, rtol=1e-6)


@pytest.mark.parametrize('condition', [True, False])
def test_if_on_a_constant_condition_and_its_gradient(condition):
    rng = np.random.RandomState(int(condition))
    feeds = dict(x=rng.randn(3, 2).astype(np.float32), w_a=rng.randn(1, 2).astype(np.float32),
                 w_b=rng.randn(1, 2).astype(np.float32), b=np.float32([0.25]))

    def build():
        with NetBuilder(_use_control_ops=True, initial_scope=['x', 'w_a', 'w_b', 'b']) as nb:
            y = ops.ConstantFill([], 'y', shape=[3, 1], value=0.0)
            with ops.IfNet(ops.Const(condition)):
                ops.FC(['x', 'w_a', 'b'], y)
            with ops.Else():
                ops.FC(['x', 'w_b', 'b'], 'fc_b')
                ops.Mul(['fc_b', 'fc_b'], y)
            loss = ops.SumElements(y, 'loss')
        net = nb.get()[0]
        net.AddGradientOperators([loss])
        return [net]
    assert_gpu_equals_cpu(build, feeds, ['y', 'w_a_grad', 'w_b_grad', 'x_grad'])


@pytest.mark.parametrize('condition', [True, False])
def test_if_reads_a_condition_fed_to_the_gpu(condition):
    def build():
        then_net, else_net = core.Net('then'), core.Net('else')
        then_net.Scale('x', 'y', scale=2.0)
        else_net.Scale('x', 'y', scale=-3.0)
        net = core.Net('if_fed')
        net.If('cond', [], then_net=then_net.Proto(), else_net=else_net.Proto())
        return [net]
    y, = assert_gpu_equals_cpu(build, dict(cond=np.bool_(condition), x=np.float32([1, 2])), ['y'])
    np.testing.assert_array_equal(y, np.float32([1, 2]) * (2.0 if condition else -3.0))


@pytest.mark.parametrize('rounds', [1, 3])
def test_while_and_its_gradient(rounds):
    def build():
        net = squaring_loop(rounds)
        net.AddGradientOperators(['s'])
        return [net]
    x, y, dx = assert_gpu_equals_cpu(build, {}, ['x', 'y', 'x_grad'])
    expected_x = 1.5 ** (2 ** rounds)
    np.testing.assert_allclose(x, expected_x, rtol=1e-6)


T, N, D, H = 4, 3, 3, 4


def test_lstm_forward_and_gradients():
    rng = np.random.RandomState(7)
    params = {'lstm/i2h_w': (4 * H, D), 'lstm/i2h_b': (4 * H,),
              'lstm/gates_t_w': (4 * H, H), 'lstm/gates_t_b': (4 * H,)}
    feeds = {name: (0.5 * rng.randn(*shape)).astype(np.float32)
             for name, shape in params.items()}
    feeds.update(x=rng.randn(T, N, D).astype(np.float32), lengths=np.int32([T, 2, 3]),
                 h0=rng.randn(1, N, H).astype(np.float32),
                 c0=rng.randn(1, N, H).astype(np.float32))
    grads = {}

    def build():
        model = model_helper.ModelHelper(name='gpu_lstm')
        x, lengths, h0, c0 = model.net.AddExternalInputs('x', 'lengths', 'h0', 'c0')
        outputs = rnn_cell.LSTM(model, x, lengths, (h0, c0), D, H, scope='lstm',
                                outputs_with_grads=(0, 1))
        loss = model.net.Sum([model.net.SumElements(outputs[0]),
                              model.net.SumElements(model.net.Mul([outputs[1], outputs[1]]))],
                             'loss')
        grads.update(model.AddGradientOperators([loss]))
        return [model.net]
    fetches = ['loss'] + [str(grads_name) for grads_name in ('lstm/i2h_w_grad', 'x_grad',
                                                             'h0_grad', 'c0_grad')]
    assert_gpu_equals_cpu(build, feeds, fetches, rtol=1e-4, atol=1e-5)


def run_model_on(device, build, feeds):
    """Builds a model under `device`, runs its param_init_net, then replaces
    every parameter with values seeded by its name (the random fills differ
    between devices), feeds `feeds` and runs the model's net."""
    workspace.ResetWorkspace()
    with core.DeviceScope(device):
        model, fetch_names = build()
    workspace.RunNetOnce(model.param_init_net)
    for param in model.params:
        shape = workspace.FetchBlob(str(param)).shape
        rng = np.random.RandomState(zlib.crc32(str(param).encode()))
        workspace.FeedBlob(str(param), (0.4 * rng.randn(*shape)).astype(np.float32),
                           device_option=device)
    for name, value in feeds.items():
        workspace.FeedBlob(name, np.asarray(value), device_option=device)
    workspace.RunNetOnce(model.net)
    return [workspace.FetchBlob(str(name)) for name in fetch_names]


def assert_model_gpu_equals_cpu(build, feeds, rtol=1e-4, atol=1e-5):
    cpu = run_model_on(CPU, build, feeds)
    gpu = run_model_on(GPU, build, feeds)
    for k, (c, g) in enumerate(zip(cpu, gpu)):
        assert c.shape == g.shape, k
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, err_msg='fetch %d' % k)
    workspace.ResetWorkspace()


def squares_loss(model, blobs):
    terms = [model.net.SumElements(model.net.Mul([b, b])) for b in blobs]
    return model.net.Sum(terms, 'loss')


@pytest.mark.parametrize('linear_before_reset', [False, True])
def test_gru_forward_and_gradients(linear_before_reset):
    rng = np.random.RandomState(8)
    feeds = dict(x=rng.randn(T, N, D).astype(np.float32), lengths=np.int32([T, 1, 3]),
                 h0=rng.randn(1, N, H).astype(np.float32))

    def build():
        model = model_helper.ModelHelper(name='gpu_gru')
        x, lengths, h0 = model.net.AddExternalInputs('x', 'lengths', 'h0')
        outputs = gru_cell.GRU(model, x, lengths, [h0], D, H, scope='gru',
                               linear_before_reset=linear_before_reset)
        grads = model.AddGradientOperators([squares_loss(model, [outputs[0]])])
        return model, ['loss', outputs[0], grads['x'], grads['h0']] + [
            grads[p] for p in model.params]
    assert_model_gpu_equals_cpu(build, feeds)


def test_lstm_with_attention_decoder_forward_and_gradients():
    """The decoder of Caffe2's seq2seq: an LSTM attending over encoder outputs."""
    rng = np.random.RandomState(9)
    t_enc, enc_dim, dec_dim = 5, 6, 4
    feeds = dict(dec_in=rng.randn(T, N, D).astype(np.float32),
                 dec_len=np.int32([T, 2, 3]),
                 h0=rng.randn(1, N, dec_dim).astype(np.float32),
                 c0=rng.randn(1, N, dec_dim).astype(np.float32),
                 ctx0=rng.randn(1, N, enc_dim).astype(np.float32),
                 enc_out=rng.randn(t_enc, N, enc_dim).astype(np.float32),
                 enc_len=np.int32([5, 3, 4]))

    def build():
        model = model_helper.ModelHelper(name='gpu_attention')
        inputs = model.net.AddExternalInputs(*feeds)
        dec_in, dec_len, h0, c0, ctx0, enc_out, enc_len = inputs
        outputs = rnn_cell.LSTMWithAttention(
            model, dec_in, dec_len, h0, c0, ctx0, enc_dim, enc_out, enc_len, D, dec_dim,
            scope='decoder', outputs_with_grads=(0, 4))
        grads = model.AddGradientOperators([squares_loss(model, [outputs[0], outputs[4]])])
        return model, ['loss', outputs[0], outputs[4], grads['enc_out'], grads['dec_in']] + [
            grads[p] for p in model.params]
    assert_model_gpu_equals_cpu(build, feeds)


# The ops Caffe2's sequence models put on GPUs (seq2seq, beam search, LSTM
# cells): each must run under a CUDA device option, with a kernel of its own
# or through the CUDA fallback, and equal its CPU result.
def _rand(*shape):
    return np.random.RandomState(sum(shape) + len(shape)).uniform(-1, 1, shape).astype(np.float32)


OPS = [
    ('Tile', dict(X=_rand(2, 3)), ['Y'], dict(tiles=2, axis=1)),
    ('TopK', dict(X=_rand(3, 5)), ['Values', 'Indices'], dict(k=2)),
    ('Negative', dict(X=_rand(4)), ['Y'], {}),
    ('ElementwiseLinear', dict(X=_rand(4, 3), w=_rand(3), b=_rand(3)), ['Y'], {}),
    ('DotProduct', dict(X=_rand(4, 3), Y=_rand(4, 3)), ['Z'], {}),
    ('SequenceMask', dict(X=_rand(3, 4), lengths=np.int32([1, 2, 3])), ['Y'],
     dict(mode='sequence')),
    ('BooleanMask', dict(data=_rand(5), mask=np.bool_([1, 0, 1, 1, 0])), ['masked'], {}),
    ('LSTMUnit', dict(h=_rand(1, 3, 2), c=_rand(1, 3, 2), gates=_rand(1, 3, 8),
                      seq_lengths=np.int32([1, 2, 0]), t=np.int32([0])), ['h_t', 'c_t'], {}),
    ('Conditional', dict(cond=np.bool_([1, 0, 1]), A=_rand(3, 2), B=_rand(3, 5)[:, :2].copy()),
     ['Y'], {}),
    ('ReversePackedSegs', dict(data=_rand(3, 2, 4), lengths=np.int32([3, 1])), ['Y'], {}),
    ('ScatterWeightedSum', dict(X0=_rand(5, 3), w0=np.float32([0.5]), idx=np.int64([0, 3]),
                                X1=_rand(2, 3), w1=np.float32([2.0])), ['X0'], {}),
]


@pytest.mark.parametrize('op_type,inputs,outputs,args', OPS, ids=[o[0] for o in OPS])
def test_sequence_model_op_on_gpu_equals_cpu(op_type, inputs, outputs, args):
    def build():
        net = core.Net(op_type.lower())
        getattr(net, op_type)(list(inputs), outputs, **args)
        return [net]
    assert_gpu_equals_cpu(build, inputs, outputs)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v', '-rs']))
