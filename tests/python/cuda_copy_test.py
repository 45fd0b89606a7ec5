"""Host/device copies (issue 9): FeedBlob/FetchBlob with a CUDA device
option, the copy ops' CUDA kernels and the Gloo collectives on GPU tensors.

Without a GPU this checks what it can (registration, clean errors naming the
blob and the reason); the GPU cases skip, saying why."""
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from doppio import core, workspace
from doppio.proto import doppio_pb2

NUM_GPUS = workspace.NumCudaDevices()
NO_GPU_REASON = 'needs a CUDA GPU: ' + (workspace.CudaUnavailableReason() or 'none')
needs_gpu = pytest.mark.skipif(NUM_GPUS == 0, reason=NO_GPU_REASON)
needs_no_gpu = pytest.mark.skipif(NUM_GPUS > 0, reason='needs a machine without CUDA')

COPY_OPS = ['CopyCPUToGPU', 'CopyGPUToCPU', 'CopyFromCPUInput', 'EnsureCPUOutput', 'Copy',
            'CopyOnDeviceLike']


def gpu(device=0):
    return core.DeviceOption(doppio_pb2.CUDA, device)


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def run(op_type, inputs, outputs, device_option=None, **kwargs):
    workspace.RunOperatorOnce(core.CreateOperator(op_type, inputs, outputs,
                                                  device_option=device_option, **kwargs))


# ---------------------------------------------------------------- everywhere

def test_build_reports_cuda_support_and_the_device_count():
    # Built with CUDA; Caffe2's has_gpu_support also needs a visible GPU.
    assert workspace.has_cuda_support is True
    assert workspace.has_gpu_support is (NUM_GPUS > 0)
    assert workspace.C.num_cuda_devices() == NUM_GPUS
    assert isinstance(NUM_GPUS, int) and NUM_GPUS >= 0
    reason = workspace.CudaUnavailableReason()
    assert (reason == '') == (NUM_GPUS > 0)


@pytest.mark.parametrize('op_type', COPY_OPS)
def test_copy_ops_are_registered_for_cuda(op_type):
    devices = workspace.C.registered_operator_devices(op_type)
    assert ('CUDA', '') in devices
    assert workspace.C.schema(op_type)['min_input'] >= 1


def test_copy_ops_that_caffe2_runs_on_the_cpu_are_registered_there():
    for op_type in ['Copy', 'CopyFromCPUInput', 'EnsureCPUOutput', 'CopyOnDeviceLike']:
        assert ('CPU', '') in workspace.C.registered_operator_devices(op_type)
    for op_type in ['CopyCPUToGPU', 'CopyGPUToCPU']:
        assert ('CPU', '') not in workspace.C.registered_operator_devices(op_type)


def test_gloo_collectives_are_registered_for_cuda():
    for op_type in ['Allreduce', 'Broadcast']:
        assert ('CUDA', 'GLOO') in workspace.C.registered_operator_devices(op_type)


def test_cpu_copy_ops_copy_on_the_host():
    x = np.arange(6, dtype=np.int64).reshape(2, 3) * 7 - 3
    workspace.FeedBlob('x', x)
    run('CopyFromCPUInput', ['x'], ['y'])
    run('EnsureCPUOutput', ['y'], ['z'])
    np.testing.assert_array_equal(workspace.FetchBlob('z'), x)
    assert workspace.FetchBlob('z').dtype == np.int64


def test_device_copy_gradients_go_back_the_other_way():
    for forward, backward in [('CopyCPUToGPU', 'CopyGPUToCPU'),
                              ('CopyGPUToCPU', 'CopyCPUToGPU')]:
        op = core.CreateOperator(forward, ['x'], ['y'], device_option=gpu())
        grad_ops, _ = core.GradientRegistry.GetGradientForOp(op, ['y_grad'])
        assert [g.type for g in grad_ops] == [backward]
        assert list(grad_ops[0].input) == ['y_grad']
        assert list(grad_ops[0].output) == ['x_grad']


# ---------------------------------------------------------------- no GPU

@needs_no_gpu
def test_feed_to_cuda_names_the_blob_and_the_reason():
    with pytest.raises(RuntimeError) as error:
        workspace.FeedBlob('on_gpu', np.ones(3, np.float32), device_option=gpu(0))
    message = str(error.value)
    assert "'on_gpu'" in message and 'CUDA' in message
    assert workspace.CudaUnavailableReason() in message
    assert not workspace.HasBlob('on_gpu')


@needs_no_gpu
def test_fetch_with_a_cuda_option_names_the_blob_and_the_reason():
    workspace.FeedBlob('host', np.ones(3, np.float32))
    with pytest.raises(RuntimeError) as error:
        workspace.FetchBlob('host', device_option=gpu(0))
    assert "'host'" in str(error.value)
    assert workspace.CudaUnavailableReason() in str(error.value)
    # Without the option the host blob is fetched as before.
    np.testing.assert_array_equal(workspace.FetchBlob('host'), np.ones(3, np.float32))


@needs_no_gpu
@pytest.mark.parametrize('op_type', COPY_OPS)
def test_cuda_copy_op_without_a_gpu_fails_cleanly(op_type):
    workspace.FeedBlob('x', np.ones(2, np.float32))
    inputs = ['x', 'x'] if op_type == 'CopyOnDeviceLike' else ['x']
    with pytest.raises(RuntimeError) as error:
        run(op_type, inputs, ['y'], device_option=gpu(0))
    # Registered: the failure is the missing device, not a missing kernel.
    assert 'no CUDA implementation' not in str(error.value)
    assert workspace.CudaUnavailableReason() in str(error.value)
    assert op_type in str(error.value)


@needs_no_gpu
def test_gloo_allreduce_on_cuda_without_a_gpu_fails_cleanly():
    workspace.FeedBlob('x', np.ones(2, np.float32))
    # A stand-in for the common world: the op's device is checked first.
    workspace.FeedBlob('world', np.zeros(1, np.int32))
    with pytest.raises(RuntimeError) as error:
        run('Allreduce', ['world', 'x'], ['x'], device_option=gpu(0), engine='GLOO')
    assert 'no CUDA implementation' not in str(error.value)
    assert workspace.CudaUnavailableReason() in str(error.value)


# ---------------------------------------------------------------- with a GPU

ROUND_TRIP_CASES = [
    (np.float32, (2, 3)), (np.float64, (5,)), (np.int32, (4, 1, 3)), (np.int64, (7,)),
    (np.uint8, (3, 3)), (np.int8, (2, 2)), (np.float16, (6,)), (np.bool_, (5,)),
    (np.float32, (0, 4)), (np.float32, ()),
]


def sample(dtype, shape, seed=0):
    rng = np.random.RandomState(seed)
    values = rng.uniform(-100, 100, size=shape)
    if dtype == np.bool_:
        return values > 0
    return np.asarray(values).astype(dtype)


@needs_gpu
@pytest.mark.parametrize('dtype,shape', ROUND_TRIP_CASES)
def test_feed_fetch_round_trip_through_the_gpu(dtype, shape):
    x = sample(dtype, shape)
    workspace.FeedBlob('x', x, device_option=gpu(0))
    back = workspace.FetchBlob('x')
    assert back.dtype == x.dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)


@needs_gpu
@pytest.mark.parametrize('dtype,shape', ROUND_TRIP_CASES)
def test_copy_ops_round_trip_cpu_gpu_cpu(dtype, shape):
    x = sample(dtype, shape, seed=1)
    workspace.FeedBlob('x', x)
    run('CopyCPUToGPU', ['x'], ['x_gpu'], device_option=gpu(0))
    run('Copy', ['x_gpu'], ['x_gpu2'], device_option=gpu(0))
    run('CopyGPUToCPU', ['x_gpu2'], ['y'], device_option=gpu(0))
    run('CopyFromCPUInput', ['y'], ['y_gpu'], device_option=gpu(0))
    run('EnsureCPUOutput', ['y_gpu'], ['z'], device_option=gpu(0))
    for name in ['y', 'z']:
        out = workspace.FetchBlob(name)
        assert out.dtype == x.dtype and out.shape == x.shape
        np.testing.assert_array_equal(out, x)


@needs_gpu
def test_copy_gpu_to_cpu_refuses_a_host_input():
    workspace.FeedBlob('x', np.ones(2, np.float32))
    with pytest.raises(RuntimeError, match="'x'.*CPU"):
        run('CopyGPUToCPU', ['x'], ['y'], device_option=gpu(0))


@pytest.mark.skipif(NUM_GPUS < 2, reason='needs two CUDA GPUs (sees {})'.format(NUM_GPUS))
def test_copy_between_two_gpus():
    x = sample(np.float32, (33, 17), seed=2)
    workspace.FeedBlob('x', x, device_option=gpu(0))
    run('Copy', ['x'], ['x1'], device_option=gpu(1))
    np.testing.assert_array_equal(workspace.FetchBlob('x1'), x)
    run('CopyOnDeviceLike', ['x1', 'x'], ['x0'], device_option=gpu(1))
    np.testing.assert_array_equal(workspace.FetchBlob('x0'), x)


_GLOO_GPU_WORKER = textwrap.dedent('''
    import json, sys
    import numpy as np
    from doppio import core, workspace
    from doppio.proto import doppio_pb2
    path, rank, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    def run(op, i, o, **kw):
        workspace.RunOperatorOnce(core.CreateOperator(op, i, o, **kw))
    run('FileStoreHandlerCreate', [], ['store'], path=path, prefix='gpu')
    run('CreateCommonWorld', ['store'], ['world'], name='world', size=2, rank=rank,
        interface='lo', timeout_ms=20000)
    gpu = core.DeviceOption(doppio_pb2.CUDA, 0)
    workspace.FeedBlob('a', np.arange(9, dtype=np.float32) * (rank + 1), device_option=gpu)
    workspace.FeedBlob('b', np.full(4, rank + 0.25), device_option=gpu)
    # One Allreduce per tensor: inputs of one Allreduce are copies of one
    # tensor (Caffe2's semantics) and are summed together.
    run('Allreduce', ['world', 'a'], ['a'], engine='GLOO', device_option=gpu)
    run('Allreduce', ['world', 'b'], ['b'], engine='GLOO', device_option=gpu)
    # Two differently shaped tensors summed by one packed Gloo allreduce.
    workspace.FeedBlob('d', np.arange(3, dtype=np.float32) + rank, device_option=gpu)
    workspace.FeedBlob('e', np.full((2, 2), 2.0 ** rank, np.float32), device_option=gpu)
    run('AllreduceCoalesced', ['world', 'd', 'e'], ['d', 'e'], engine='GLOO', device_option=gpu)
    workspace.FeedBlob('c', np.arange(5, dtype=np.int32) + 10 * rank, device_option=gpu)
    run('Broadcast', ['world', 'c'], ['c'], engine='GLOO', root=1, device_option=gpu)
    with open(out, 'w') as f:
        json.dump({k: workspace.FetchBlob(k).tolist() for k in 'abcde'}, f)
''')


@needs_gpu
def test_gloo_allreduce_and_broadcast_on_gpu_tensors_between_two_processes():
    import json
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        procs = []
        for rank in range(2):
            out = os.path.join(tmp, 'out%d.json' % rank)
            procs.append((out, subprocess.Popen(
                [sys.executable, '-c', _GLOO_GPU_WORKER, tmp, str(rank), out], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        results = []
        for out, proc in procs:
            log, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, log.decode()
            with open(out) as f:
                results.append(json.load(f))
    a = np.arange(9, dtype=np.float32) * 1 + np.arange(9, dtype=np.float32) * 2
    b = np.full(4, 0.25) + np.full(4, 1.25)
    c = np.arange(5) + 10
    for result in results:
        np.testing.assert_array_equal(result['a'], a)
        np.testing.assert_array_equal(result['b'], b)
        np.testing.assert_array_equal(result['c'], c)
        np.testing.assert_array_equal(result['d'], 2 * np.arange(3) + 1)
        np.testing.assert_array_equal(result['e'], np.full((2, 2), 3.0))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-rs", "-p", "no:cacheprovider"]))
