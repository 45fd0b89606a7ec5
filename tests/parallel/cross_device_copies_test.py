"""core.InjectCrossDeviceCopies (parallel/cross_device_copies.cc) and the
pipeline model-parallel reference CNN (python_api/examples/model_parallel_cnn.py)."""

import sys

import numpy as np
import pytest

from caffe2.proto import caffe2_pb2
from caffe2.python import core, workspace

from python_api.examples import model_parallel_cnn

CPU0 = core.DeviceOption(caffe2_pb2.CPU, 0)
CPU1 = core.DeviceOption(caffe2_pb2.CPU, 1)


def key(device):
    return (device.device_type, device.cuda_gpu_id)


def two_device_net():
    net = core.Net('two_devices')
    net.AddExternalInput('x', 'w')
    with core.DeviceScope(CPU0):
        net.Relu('x', 'y')
    with core.DeviceScope(CPU1):
        net.Mul(['y', 'w'], 'a')
        net.Add(['y', 'a'], 'b')      # second reader of y on cpu 1
        net.Relu('b', 'b')            # in place, same device
    with core.DeviceScope(CPU0):
        net.Add(['y', 'x'], 'c')      # same-device read of y
        net.Mul(['w', 'c'], 'd')      # w was first read on cpu 1
    return net


def test_copies_once_per_blob_and_device():
    new_net, blob_to_device = core.InjectCrossDeviceCopies(two_device_net())
    ops = new_net.Proto().op
    copies = [(op.input[0], op.output[0], key(op.device_option)) for op in ops
              if op.type == 'Copy']
    assert copies == [('y', 'y_cpu_1', (0, 1)), ('w', 'w_cpu', (0, 0))]
    assert [op.type for op in ops] == ['Relu', 'Copy', 'Mul', 'Add', 'Relu', 'Add', 'Copy', 'Mul']
    assert list(ops[2].input) == ['y_cpu_1', 'w']
    assert list(ops[3].input) == ['y_cpu_1', 'a']
    assert list(ops[4].input) == ['b'] and list(ops[4].output) == ['b']
    assert list(ops[5].input) == ['y', 'x']          # same device: no copy
    assert list(ops[7].input) == ['w_cpu', 'c']
    # External inputs untouched, placed on their first reader's device.
    assert list(new_net.Proto().external_input) == ['x', 'w']
    assert key(blob_to_device['x']) == (0, 0)
    assert key(blob_to_device['w']) == (0, 1)
    assert key(blob_to_device['y_cpu_1']) == (0, 1)
    assert key(blob_to_device['d']) == (0, 0)


def test_in_place_op_on_a_copy_writes_the_copy():
    net = core.Net('in_place')
    net.AddExternalInput('x')
    with core.DeviceScope(CPU0):
        net.Relu('x', 'y')
    with core.DeviceScope(CPU1):
        net.Relu('y', 'y')
    new_net, blob_to_device = core.InjectCrossDeviceCopies(net)
    last = new_net.Proto().op[-1]
    assert list(last.input) == ['y_cpu_1'] and list(last.output) == ['y_cpu_1']


def test_rewritten_blob_is_copied_again():
    net = core.Net('rewrite')
    net.AddExternalInput('x')
    with core.DeviceScope(CPU0):
        net.Relu('x', 'y')
    with core.DeviceScope(CPU1):
        net.Relu('y', 'a')
    with core.DeviceScope(CPU0):
        net.Sigmoid('x', 'y')
    with core.DeviceScope(CPU1):
        net.Relu('y', 'b')
    new_net, _ = core.InjectCrossDeviceCopies(net)
    assert [op.type for op in new_net.Proto().op].count('Copy') == 2


def test_unknown_blob_names_blob_and_op():
    net = core.Net('bad')
    with core.DeviceScope(CPU1):
        net.Relu('ghost', 'y')
    # Net adds unknown inputs to external_input itself; a hand-made NetDef may not.
    del net.Proto().external_input[:]
    with pytest.raises(RuntimeError, match=r"ghost.*Relu"):
        core.InjectCrossDeviceCopies(net)


def test_gradients_on_parameter_devices():
    model, _, blob_to_device = model_parallel_cnn.build_model(
        model_parallel_cnn.stage_devices(use_gpu=False))
    params = [str(p) for p in model.params]
    assert params
    for param in params:
        want = 1 if param.startswith('cpu_1/') else 0
        assert key(blob_to_device[param]) == (0, want), param
        assert key(blob_to_device[param + '_grad']) == (0, want), param
    # The only cross-device reads of the forward and backward passes.
    copies = sorted((op.input[0], op.output[0]) for op in model.net.Proto().op
                    if op.type == 'Copy')
    assert ('cpu_0/pool2', 'cpu_0/pool2_cpu_1') in copies
    assert ('cpu_0/pool2_grad', 'cpu_0/pool2_grad_cpu') in copies


@pytest.mark.parametrize('net_type', ['simple', 'dag'])
def test_model_parallel_matches_single_device(net_type):
    batches = model_parallel_cnn.random_batches(3, 16, seed=3)
    workspace.SwitchWorkspace('model_parallel_' + net_type, True)
    parallel, loss, _ = model_parallel_cnn.build_model(
        model_parallel_cnn.stage_devices(use_gpu=False), net_type=net_type,
        name='mp_' + net_type)
    workspace.RunNetOnce(parallel.param_init_net)
    names = [str(p) for p in parallel.params]
    initial = {n: workspace.FetchBlob(n) for n in names}
    parallel_losses = run_from(parallel, loss, initial, batches)
    parallel_params = {n.split('/', 1)[1]: workspace.FetchBlob(n) for n in names}

    workspace.SwitchWorkspace('single_device_' + net_type, True)
    single, single_loss, _ = model_parallel_cnn.build_model(
        [(CPU0, ''), (CPU0, '')], net_type=net_type, name='sd_' + net_type)
    assert not [op for op in single.net.Proto().op if op.type.startswith('Copy')]
    single_losses = run_from(single, single_loss,
                             {n.split('/', 1)[1]: v for n, v in initial.items()}, batches)
    # The same ops on the same data in the same order: equal to the bit.
    np.testing.assert_array_equal(parallel_losses, single_losses)
    for name, value in parallel_params.items():
        np.testing.assert_array_equal(value, workspace.FetchBlob(name), err_msg=name)
    # Training moved the parameters (a comparison of untouched blobs proves
    # nothing); conv biases get zero gradient through the batch norm after them.
    trained = [n for n in names if not n.endswith(('conv1_b', 'conv2_b'))]
    assert all(not np.allclose(initial[n], parallel_params[n.split('/', 1)[1]]) for n in trained)


def run_from(model, loss, params, batches):
    # One intra-op thread for both nets. By default the two-device net gets
    # 1 thread per op and the one-device net 2, and oneDNN's convolution
    # gradients round differently with the thread count (~1e-8 per step);
    # worse, a process alternating the two counts on one thread while the
    # machine is loaded saw parameters differ by up to 2e-4 after 3 steps
    # (tools/bench/README.md, "Known issues"). With equal counts the two nets
    # agree to the bit, loaded or not.
    arg = model.net.Proto().arg.add()
    arg.name = 'intra_op_threads'
    arg.i = 1
    workspace.RunNetOnce(model.param_init_net)
    for name, value in params.items():
        workspace.FeedBlob(name, value)
    workspace.FeedBlob('data', batches[0][0])
    workspace.FeedBlob('label', batches[0][1])
    workspace.CreateNet(model.net, overwrite=True)
    losses = []
    for data, label in batches:
        workspace.FeedBlob('data', data)
        workspace.FeedBlob('label', label)
        workspace.RunNet(model.net.Name())
        losses.append(float(workspace.FetchBlob(loss)))
    return losses


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
