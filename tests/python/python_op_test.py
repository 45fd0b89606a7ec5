"""Python ops (core.CreatePythonOperator, Net.Python): the function sees the
inputs as numpy views and fills outputs in place, exceptions become op errors
naming the op, gradients run the registered gradient function (checked
against finite differences through the backward pass), pickled builders make
a function per op, and pass_workspace hands the op's workspace."""
import sys

import numpy as np
import pytest

from doppio import core, model_helper, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def test_inputs_are_views_and_outputs_fill_in_place():
    seen = {}

    def f(inputs, outputs):
        seen['shape'] = inputs[0].shape
        seen['type'] = type(inputs[0].data)
        outputs[0].reshape(inputs[0].shape)
        outputs[0].data[...] = inputs[0].data * 3
        outputs[1].feed(np.arange(4, dtype=np.int64))

    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    workspace.FeedBlob('x', x)
    workspace.RunOperatorOnce(core.CreatePythonOperator(f, ['x'], ['y', 'z']))
    assert seen == {'shape': (2, 3), 'type': np.ndarray}
    np.testing.assert_allclose(workspace.FetchBlob('y'), x * 3)
    np.testing.assert_array_equal(workspace.FetchBlob('z'), np.arange(4))


def test_exception_is_the_ops_error_and_the_process_survives():
    def f(inputs, outputs):
        raise ValueError('bad value 42')

    workspace.FeedBlob('x', np.zeros(2, np.float32))
    op = core.CreatePythonOperator(f, ['x'], ['y'], name='my_python_op')
    with pytest.raises(RuntimeError, match='bad value 42') as info:
        workspace.RunOperatorOnce(op)
    assert 'Python' in str(info.value)
    # The interpreter and the op still work.
    workspace.RunOperatorOnce(core.CreatePythonOperator(
        lambda i, o: o[0].feed(np.ones(1, np.float32)), [], ['ok']))
    assert workspace.FetchBlob('ok')[0] == 1


def test_gradient_function_in_a_backward_pass_matches_finite_differences():
    def f(inputs, outputs):
        outputs[0].reshape(inputs[0].shape)
        outputs[0].data[...] = np.sin(inputs[0].data)

    def grad_f(inputs, outputs):
        x, _, dy = inputs
        outputs[0].reshape(x.shape)
        outputs[0].data[...] = np.cos(x.data) * dy.data

    model = model_helper.ModelHelper(name='py')
    y = model.net.Python(f, grad_f)(['x'], ['y'])
    loss = model.net.SumElements(y, 'loss')
    grad_map = model.AddGradientOperators([loss])
    x = np.random.RandomState(1).randn(3, 2)
    workspace.FeedBlob('x', x)
    workspace.RunNetOnce(model.net)
    got = workspace.FetchBlob(grad_map['x'])
    h = 1e-6
    numeric = np.array([(np.sum(np.sin(x + h * e)) - np.sum(np.sin(x - h * e))) / (2 * h)
                        for e in np.eye(x.size).reshape((x.size,) + x.shape)]).reshape(x.shape)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_gradient_indices_select_what_the_gradient_gets():
    model = model_helper.ModelHelper(name='idx')
    model.net.Python(lambda i, o: None, lambda i, o: None, grad_output_indices=[1],
                     grad_input_indices=[0])(['a', 'b'], ['c', 'd'])
    ops, _ = core.GradientRegistry.GetGradientForOp(model.net.Proto().op[0], ['c_g', 'd_g'])
    assert list(ops[0].input) == ['a', 'b', 'c', 'd', 'd_g']
    assert list(ops[0].output) == ['a_grad']


class Scaler(object):
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, inputs, outputs):
        outputs[0].feed(inputs[0].data * self.factor)


def test_pickled_builder_makes_a_function_per_op():
    net = core.Net('builder')
    net.Python((Scaler, (2.0,), {}))(['x'], ['y'])
    workspace.FeedBlob('x', np.array([1.5], np.float32))
    workspace.RunNetOnce(net)
    assert workspace.FetchBlob('y')[0] == 3.0


def test_pass_workspace_hands_the_ops_workspace():
    fetched = {}

    def f(inputs, outputs, ws):
        fetched['x'] = ws.blobs['hidden'].fetch()
        ws.create_blob('written').feed(np.array([7], np.int32))

    workspace.FeedBlob('hidden', np.array([1.0, 2.0], np.float32))
    net = core.Net('ws')
    net.Python(f, pass_workspace=True)([], [])
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(fetched['x'], [1.0, 2.0])
    assert workspace.FetchBlob('written')[0] == 7


def test_unknown_token_is_a_clear_error():
    op = core.CreateOperator('Python', [], ['y'], token='no_such_token')
    with pytest.raises(RuntimeError, match='no_such_token'):
        workspace.RunOperatorOnce(op)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
