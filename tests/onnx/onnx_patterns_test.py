"""doppio.onnx.patterns: the LayerNorm and Gelu chains fold into single
nodes only when the constants and the data flow are what the formula needs;
every graph, folded or not, must still compute numpy's result."""
import math
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from doppio.onnx import backend, patterns


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def model(nodes, initializers, outputs=('y',), shape=(2, 3, 4)):
    graph = helper.make_graph(
        nodes, 'g', [helper.make_tensor_value_info('x', TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])


def gelu_graph(divisor=math.sqrt(2), half=0.5, erf_is_output=False):
    nodes = [helper.make_node('Div', ['x', 'c'], ['a']), helper.make_node('Erf', ['a'], ['b']),
             helper.make_node('Add', ['b', 'one'], ['p']),
             helper.make_node('Mul', ['x', 'p'], ['m']),
             helper.make_node('Mul', ['m', 'half'], ['y'])]
    inits = [const('c', divisor), const('one', 1.0), const('half', half)]
    return model(nodes, inits, ('y', 'b') if erf_is_output else ('y',))


def layer_norm_graph(axes=(-1,), extra_reader=False, eps=1e-5):
    nodes = [helper.make_node('ReduceMean', ['x'], ['m'], axes=list(axes)),
             helper.make_node('Sub', ['x', 'm'], ['d']),
             helper.make_node('Pow', ['d', 'two'], ['p']),
             helper.make_node('ReduceMean', ['p'], ['v'], axes=list(axes)),
             helper.make_node('Add', ['v', 'eps'], ['ve']),
             helper.make_node('Sqrt', ['ve'], ['s']),
             helper.make_node('Div', ['d', 's'], ['n']),
             helper.make_node('Mul', ['n', 'gamma'], ['g']),
             helper.make_node('Add', ['g', 'beta'], ['y'])]
    outputs = ('y',)
    if extra_reader:
        nodes.append(helper.make_node('Neg', ['d'], ['z']))
        outputs = ('y', 'z')
    inits = [const('two', 2.0), const('eps', eps), const('gamma', [0.5, 1.0, 1.5, 2.0]),
             const('beta', [0.1, -0.2, 0.3, 0.0])]
    return model(nodes, inits, outputs)


def numpy_gelu(x, divisor=math.sqrt(2), half=0.5):
    erf = np.vectorize(math.erf)
    return x * (1 + erf(x / divisor)) * half


def numpy_layer_norm(x, axes=(-1,), eps=1e-5):
    m = x.mean(axis=axes, keepdims=True)
    d = x - m
    n = d / np.sqrt((d ** 2).mean(axis=axes, keepdims=True) + eps)
    return n * np.array([0.5, 1.0, 1.5, 2.0]) + np.array([0.1, -0.2, 0.3, 0.0])


X = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32) * 2


@pytest.mark.parametrize('graph,folds,reference', [
    (gelu_graph(), {'Gelu': 1}, numpy_gelu(X)),
    (gelu_graph(divisor=1.5), {}, numpy_gelu(X, divisor=1.5)),
    (gelu_graph(half=0.25), {}, numpy_gelu(X, half=0.25)),
    (gelu_graph(erf_is_output=True), {}, numpy_gelu(X)),
    (layer_norm_graph(), {'LayerNormalization': 1}, numpy_layer_norm(X)),
    (layer_norm_graph(eps=1e-3), {'LayerNormalization': 1}, numpy_layer_norm(X, eps=1e-3)),
    # Axis 1 of 3 is not a trailing dim.
    (layer_norm_graph(axes=(1,)), {}, None),
    (layer_norm_graph(extra_reader=True), {}, numpy_layer_norm(X)),
])
def test_folds_only_what_it_may(graph, folds, reference):
    fused, counts = patterns.fuse(graph)
    assert {k: v for k, v in counts.items() if v} == folds
    if not folds:
        assert fused is graph
    types = [node.op_type for node in fused.graph.node]
    for op_type in folds:
        assert types.count(op_type) == 1, types
    got = backend.prepare(graph).run([X])[0]
    if reference is None:
        m = X.mean(axis=1, keepdims=True)
        d = X - m
        n = d / np.sqrt((d ** 2).mean(axis=1, keepdims=True) + 1e-5)
        gamma = np.array([0.5, 1.0, 1.5, 2.0])
        reference = n * gamma + np.array([0.1, -0.2, 0.3, 0.0])
    np.testing.assert_allclose(got, reference, rtol=1e-5, atol=1e-5)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs']))
