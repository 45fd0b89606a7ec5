"""caffe2.python.muji (Caffe2's in-net allreduce across one process's GPUs):
the ops it adds, and the sums they compute against numpy.

The numerical checks run the same nets with every GPU placement replaced by
the CPU (muji.OnGPU patched), so they run on any machine; with two or more
GPUs the 2-GPU allreduce also runs on real devices."""
import numpy as np
import pytest

from caffe2.python import core, muji, workspace
from doppio.proto import doppio_pb2


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


@pytest.fixture
def cpu_placement(monkeypatch):
    monkeypatch.setattr(muji, 'OnGPU', lambda gpu_id: muji.OnCPU())


def _feed(count, seed=0):
    rng = np.random.RandomState(seed)
    values = [rng.randn(3, 5).astype(np.float32) for _ in range(count)]
    names = ['grad_{}'.format(i) for i in range(count)]
    for name, value in zip(names, values):
        workspace.FeedBlob(name, value)
    return names, values


@pytest.mark.parametrize('count', [1, 2, 3, 4, 5, 8])
def test_every_gpu_gets_the_sum(cpu_placement, count):
    names, values = _feed(count)
    net = core.Net('allreduce')
    reduced = muji.Allreduce(net, names, '_reduced')
    assert [str(r) for r in reduced] == [n + '_reduced' for n in names]
    workspace.RunNetOnce(net)
    expected = np.sum(values, axis=0)
    for name in reduced:
        np.testing.assert_allclose(workspace.FetchBlob(str(name)), expected, rtol=1e-6,
                                   atol=1e-6)
    for name, value in zip(names, values):  # inputs are left as they were
        np.testing.assert_array_equal(workspace.FetchBlob(name), value)


def test_each_op_runs_where_its_output_lives():
    net = core.Net('allreduce')
    muji.Allreduce(net, ['a', 'b', 'c', 'd'], '_r', gpu_indices=[4, 5, 6, 7])
    ops = net.Proto().op
    # Reduction on the lower GPU of each pair, then the broadcast copies.
    assert [op.type for op in ops] == ['Add', 'Add', 'Add', 'Copy', 'Copy', 'Copy']
    placement = {op.output[0]: op.device_option.cuda_gpu_id for op in ops}
    assert placement == {'a_r': 4, 'c_r': 6, 'b_r': 5, 'd_r': 7}
    assert all(op.device_option.device_type == doppio_pb2.CUDA for op in ops)


def test_mismatched_gpu_indices_are_an_error():
    with pytest.raises(RuntimeError, match='mismatch: 2 vs 3'):
        muji.Allreduce(core.Net('n'), ['a', 'b', 'c'], gpu_indices=[0, 1])


@pytest.mark.skipif(workspace.NumCudaDevices() < 2,
                    reason='needs two CUDA GPUs (sees {})'.format(workspace.NumCudaDevices()))
def test_two_real_gpus():
    rng = np.random.RandomState(1)
    values = [rng.randn(4, 4).astype(np.float32) for _ in range(2)]
    for i, value in enumerate(values):
        workspace.FeedBlob('g{}'.format(i), value, muji.OnGPU(i))
    net = core.Net('allreduce')
    muji.Allreduce(net, ['g0', 'g1'])
    workspace.RunNetOnce(net)
    for i in range(2):
        np.testing.assert_allclose(workspace.FetchBlob('g{}_reduced'.format(i)),
                                   values[0] + values[1], rtol=1e-6)


if __name__ == '__main__':
    raise SystemExit(pytest.main([__file__, '-v']))
