"""doppio.onnx.backend's API and conversions, against numpy.

Models are built here with onnx.helper; every expected value is computed by
numpy in the test. Covers: prepare/run and its input forms, the prepared
model's own workspace, run_node, onnx_graph_to_caffe2_net (init net of
GivenTensor*Fill ops, external inputs and outputs), the caffe2 alias, models
converted at the first run (values fed for static inputs), opset-dependent
semantics, and the errors for unsupported and malformed models.
"""
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import caffe2.python.onnx.backend as caffe2_backend
from doppio import workspace
from doppio.onnx import backend
from doppio.onnx.errors import (InvalidInputError, InvalidModelError, OnnxError,
                                RuntimeValueNeeded, UnsupportedError)

RNG = np.random.RandomState(7)
F = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])


def value(name, shape, elem_type=F):
    return helper.make_tensor_value_info(name, elem_type, shape)


def fc_model():
    """y = relu(x W^T + b), with W and b initializers."""
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    nodes = [helper.make_node('Gemm', ['x', 'w', 'b'], ['h'], transB=1, name='fc'),
             helper.make_node('Relu', ['h'], ['y'], name='relu')]
    model = make_model(nodes, [value('x', [2, 3])], [value('y', [2, 4])],
                       [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(b, 'b')])
    return model, w, b


# ---------------------------------------------------------------- the API

def test_prepare_and_run_match_numpy_in_every_input_form():
    model, w, b = fc_model()
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    expected = np.maximum(x @ w.T + b, 0)
    rep = backend.prepare(model)
    for inputs in ([x], (x,), {'x': x}, x):
        outputs = rep.run(inputs)
        np.testing.assert_allclose(outputs[0], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outputs['y'], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(outputs.y, expected, rtol=1e-5, atol=1e-6)
    # Serialized bytes and run_model work as well.
    np.testing.assert_allclose(backend.run_model(model.SerializeToString(), [x])[0], expected,
                               rtol=1e-5, atol=1e-6)


def conv_bn_relu_reference(x, w, scale, bias, mean, var, eps):
    """numpy: relu(batchnorm(conv3x3 pad 1 of x)), NCHW."""
    n, c, h, wd = x.shape
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum('nchw,oc->nohw', padded[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    shape = (1, -1, 1, 1)
    normalized = (out - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return np.maximum(normalized * scale.reshape(shape) + bias.reshape(shape), 0)


@pytest.mark.parametrize('optimize', [True, False])
def test_prepare_runs_the_inference_passes_unless_told_not_to(optimize):
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    scale, bias, mean = [RNG.standard_normal(4).astype(np.float32) for _ in range(3)]
    var = RNG.uniform(0.5, 2, 4).astype(np.float32)
    nodes = [helper.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1]),
             helper.make_node('BatchNormalization', ['c', 's', 'b', 'm', 'v'], ['n'],
                              epsilon=1e-3),
             helper.make_node('Relu', ['n'], ['y'])]
    model = make_model(nodes, [value('x', [2, 3, 5, 5])], [value('y', [2, 4, 5, 5])],
                       [numpy_helper.from_array(a, name) for a, name in
                        ((w, 'w'), (scale, 's'), (bias, 'b'), (mean, 'm'), (var, 'v'))])
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    rep = backend.prepare(model, optimize=optimize)
    assert rep.running_net is None
    got = rep.run([x])[0]
    np.testing.assert_allclose(got, conv_bn_relu_reference(x, w, scale, bias, mean, var, 1e-3),
                               rtol=1e-4, atol=1e-4)
    ran = [op.type for op in rep.running_net.op]
    converted = [op.type for op in rep.predict_net.op]
    assert 'SpatialBN' in converted  # the converted net itself is left as it is
    if optimize:
        assert 'SpatialBN' not in ran and 'Relu' not in ran, ran
    else:
        assert ran == converted


def test_a_prepared_model_leaves_the_users_workspace_alone():
    workspace.SwitchWorkspace('onnx_import_test_user', True)
    workspace.FeedBlob('x', np.array([42.0], dtype=np.float32))
    model, _, _ = fc_model()
    rep = backend.prepare(model)
    rep.run([np.ones((2, 3), np.float32)])
    assert workspace.CurrentWorkspace() == 'onnx_import_test_user'
    assert sorted(workspace.Blobs()) == ['x']
    np.testing.assert_array_equal(workspace.FetchBlob('x'), [42.0])
    # Two prepared models do not share blobs either.
    other = backend.prepare(model)
    assert other.workspace_name != rep.workspace_name


def test_outputs_come_in_graph_output_order():
    nodes = [helper.make_node('Neg', ['x'], ['a']), helper.make_node('Exp', ['x'], ['b'])]
    model = make_model(nodes, [value('x', [3])], [value('b', [3]), value('a', [3])])
    x = np.array([0.5, -1.0, 2.0], np.float32)
    b, a = backend.prepare(model).run([x])
    np.testing.assert_allclose(b, np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(a, -x)


def test_supports_device():
    assert backend.supports_device('CPU')
    assert not backend.supports_device('CUDA')
    assert not backend.supports_device('TPU')
    model, _, _ = fc_model()
    with pytest.raises(UnsupportedError, match='CPU only'):
        backend.prepare(model, 'CUDA:0')


def test_run_node():
    node = helper.make_node('Softmax', ['x'], ['y'], axis=0)
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    expected = np.exp(x) / np.exp(x).sum(axis=0, keepdims=True)
    (y,) = backend.run_node(node, [x])
    np.testing.assert_allclose(y, expected, rtol=1e-5)


def test_onnx_graph_to_caffe2_net():
    model, w, b = fc_model()
    init_net, predict_net = backend.onnx_graph_to_caffe2_net(model)
    fills = {op.output[0]: op.type for op in init_net.op}
    assert fills == {'w': 'GivenTensorFill', 'b': 'GivenTensorFill'}
    assert 'x' in predict_net.external_input and 'w' in predict_net.external_input
    assert list(predict_net.external_output) == ['y']
    assert [op.type for op in predict_net.op] == ['FC', 'Relu']
    # The nets run as ordinary Doppio nets.
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    workspace.SwitchWorkspace('onnx_import_test_nets', True)
    workspace.ResetWorkspace()
    workspace.RunNetOnce(init_net)
    workspace.FeedBlob('x', x)
    workspace.RunNetOnce(predict_net)
    np.testing.assert_allclose(workspace.FetchBlob('y'), np.maximum(x @ w.T + b, 0),
                               rtol=1e-5, atol=1e-6)


def test_caffe2_alias_is_the_same_module():
    assert caffe2_backend is backend
    assert caffe2_backend.Caffe2Backend is backend.DoppioBackend
    from caffe2.python.onnx.backend_rep import Caffe2Rep
    from doppio.onnx.backend_rep import DoppioRep
    assert Caffe2Rep is DoppioRep


def test_initializer_types_round_trip():
    values = {
        'f16': np.array([1.5, -2.25], np.float16), 'f64': np.array([0.25, 3.0]),
        'i8': np.array([-3, 7], np.int8), 'u8': np.array([0, 255], np.uint8),
        'i32': np.array([-70000, 5], np.int32), 'i64': np.array([2 ** 40, -1], np.int64),
        'b': np.array([True, False]),
    }
    types = {'f16': TensorProto.FLOAT16, 'f64': TensorProto.DOUBLE, 'i8': TensorProto.INT8,
             'u8': TensorProto.UINT8, 'i32': TensorProto.INT32, 'i64': TensorProto.INT64,
             'b': TensorProto.BOOL}
    nodes = [helper.make_node('Identity', [k], [k + '_out']) for k in values]
    model = make_model(nodes, [], [value(k + '_out', [2], types[k]) for k in values],
                       [numpy_helper.from_array(v, k) for k, v in values.items()])
    outputs = backend.prepare(model).run([])
    for (name, expected), got in zip(values.items(), outputs):
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


# ------------------------------------------------------- op semantics

def test_softmax_axis_semantics_change_at_opset_13():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    node = helper.make_node('Softmax', ['x'], ['y'], axis=1)
    model_11 = make_model([node], [value('x', [2, 3, 4])], [value('y', [2, 3, 4])], opset=11)
    model_13 = make_model([node], [value('x', [2, 3, 4])], [value('y', [2, 3, 4])], opset=13)
    flat = x.reshape(2, 12)
    coerced = (np.exp(flat) / np.exp(flat).sum(1, keepdims=True)).reshape(x.shape)
    single = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    np.testing.assert_allclose(backend.prepare(model_11).run([x])[0], coerced, rtol=1e-5)
    np.testing.assert_allclose(backend.prepare(model_13).run([x])[0], single, rtol=1e-5)


def test_hardmax_before_opset_13_coerces_to_2d():
    x = RNG.randint(0, 3, size=(2, 3, 4)).astype(np.float32)  # ties are likely
    node = helper.make_node('Hardmax', ['x'], ['y'], axis=1)
    model = make_model([node], [value('x', x.shape)], [value('y', None)], opset=11)
    flat = x.reshape(2, 12)
    expected = np.zeros_like(flat)
    expected[np.arange(2), flat.argmax(axis=1)] = 1  # the first maximum wins
    np.testing.assert_array_equal(backend.prepare(model).run([x])[0], expected.reshape(x.shape))


def test_conv_with_asymmetric_pads_and_same_lower():
    x = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)

    def reference(pads, stride):
        padded = np.pad(x, [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])
        oh = (padded.shape[2] - 3) // stride + 1
        ow = (padded.shape[3] - 3) // stride + 1
        out = np.zeros((1, 3, oh, ow), np.float32)
        for i in range(oh):
            for j in range(ow):
                patch = padded[:, :, i * stride:i * stride + 3, j * stride:j * stride + 3]
                out[0, :, i, j] = np.tensordot(w, patch[0], axes=3)
        return out

    explicit = helper.make_node('Conv', ['x', 'w'], ['y'], pads=[0, 1, 2, 0], strides=[2, 2])
    model = make_model([explicit], [value('x', x.shape)], [value('y', None)],
                       [numpy_helper.from_array(w, 'w')])
    np.testing.assert_allclose(backend.prepare(model).run([x])[0],
                               reference([0, 1, 2, 0], 2), rtol=1e-4, atol=1e-5)
    # SAME_LOWER with stride 2 on 5x6: totals 2 and 1, the odd pad first.
    same = helper.make_node('Conv', ['x', 'w'], ['y'], auto_pad='SAME_LOWER', strides=[2, 2])
    model = make_model([same], [value('x', x.shape)], [value('y', None)],
                       [numpy_helper.from_array(w, 'w')])
    np.testing.assert_allclose(backend.prepare(model).run([x])[0],
                               reference([1, 1, 1, 0], 2), rtol=1e-4, atol=1e-5)


def test_max_pool_ceil_mode():
    x = RNG.standard_normal((1, 1, 5, 5)).astype(np.float32)
    node = helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 2], strides=[2, 2],
                            ceil_mode=1)
    model = make_model([node], [value('x', x.shape)], [value('y', None)], opset=12)
    expected = np.full((1, 1, 3, 3), -np.inf, np.float32)
    for i in range(3):
        for j in range(3):
            expected[0, 0, i, j] = x[0, 0, 2 * i:2 * i + 2, 2 * j:2 * j + 2].max()
    np.testing.assert_array_equal(backend.prepare(model).run([x])[0], expected)


def test_gather_along_a_later_axis():
    data = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    indices = np.array([[3, 0], [1, 1]], np.int64)
    node = helper.make_node('Gather', ['data', 'indices'], ['y'], axis=2)
    model = make_model([node], [value('data', data.shape),
                                value('indices', indices.shape, TensorProto.INT64)],
                       [value('y', None)])
    np.testing.assert_array_equal(backend.prepare(model).run([data, indices])[0],
                                  np.take(data, indices, axis=2))


def test_gemm_with_alpha_beta_and_transposes():
    a = RNG.standard_normal((3, 2)).astype(np.float32)
    b = RNG.standard_normal((4, 3)).astype(np.float32)
    c = RNG.standard_normal((1, 4)).astype(np.float32)
    node = helper.make_node('Gemm', ['a', 'b', 'c'], ['y'], alpha=0.5, beta=2.0, transA=1,
                            transB=1)
    model = make_model([node], [value('a', a.shape), value('b', b.shape), value('c', c.shape)],
                       [value('y', None)])
    np.testing.assert_allclose(backend.prepare(model).run([a, b, c])[0],
                               0.5 * a.T @ b.T + 2.0 * c, rtol=1e-5, atol=1e-6)


def test_pytorch_style_flatten_through_shape_arithmetic():
    # x.view(x.size(0), -1) as torch.onnx exports it: the shape is computed
    # at run time by Shape, Gather, Unsqueeze and Concat.
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node('Shape', ['x'], ['shape']),
        helper.make_node('Constant', [], ['zero'],
                         value=helper.make_tensor('zero', i64, [], [0])),
        helper.make_node('Gather', ['shape', 'zero'], ['batch'], axis=0),
        helper.make_node('Unsqueeze', ['batch'], ['batch_1d'], axes=[0]),
        helper.make_node('Constant', [], ['minus_one'],
                         value=helper.make_tensor('minus_one', i64, [1], [-1])),
        helper.make_node('Concat', ['batch_1d', 'minus_one'], ['new_shape'], axis=0),
        helper.make_node('Reshape', ['x', 'new_shape'], ['y']),
    ]
    model = make_model(nodes, [value('x', ['n', 2, 3, 4])], [value('y', None)], opset=11)
    rep = backend.prepare(model)
    for batch in (1, 5):
        x = RNG.standard_normal((batch, 2, 3, 4)).astype(np.float32)
        np.testing.assert_array_equal(rep.run([x])[0], x.reshape(batch, -1))


# ------------------------------------- values needed when converting

def squeeze_model():
    node = helper.make_node('Squeeze', ['x', 'axes'], ['y'])
    return make_model([node], [value('x', [1, 3, 1]), value('axes', [1], TensorProto.INT64)],
                      [value('y', None)])


def test_static_inputs_fed_at_run_time_specialize_the_model():
    rep = backend.prepare(squeeze_model())
    assert rep.predict_net is None  # converted at the first run
    x = RNG.standard_normal((1, 3, 1)).astype(np.float32)
    y = rep.run([x, np.array([0], np.int64)])[0]
    assert y.shape == (3, 1)
    first_net = rep.predict_net
    np.testing.assert_array_equal(y, x[0])
    # Another axes value converts again; the same one reuses the nets.
    y = rep.run([x, np.array([2], np.int64)])[0]
    np.testing.assert_array_equal(y, x[:, :, 0])
    assert rep.predict_net is not first_net
    second_net = rep.predict_net
    rep.run([x, np.array([2], np.int64)])
    assert rep.predict_net is second_net


def test_fixed_nets_need_constant_static_inputs():
    with pytest.raises(RuntimeValueNeeded, match=r"input 1 \(axes, 'axes'\) must be a constant"):
        backend.onnx_graph_to_caffe2_net(squeeze_model())


# ------------------------------------------------------------ errors

def test_unsupported_op_names_op_node_and_opset():
    node = helper.make_node('Foo', ['x'], ['y'], name='n3')
    model = make_model([node], [value('x', [2])], [value('y', [2])])
    with pytest.raises(UnsupportedError) as error:
        backend.prepare(model)
    assert "ONNX op 'Foo' (node 'n3', opset 13) is not supported by doppio" in str(error.value)
    assert isinstance(error.value, RuntimeError)


def test_unknown_attribute_is_refused():
    node = helper.make_node('Relu', ['x'], ['y'], name='r', flavour=3)
    model = make_model([node], [value('x', [2])], [value('y', [2])])
    with pytest.raises(UnsupportedError, match="ONNX op 'Relu' .*'flavour'"):
        backend.prepare(model)


def test_malformed_models_are_clean_errors():
    with pytest.raises(InvalidModelError, match='cannot decode'):
        backend.prepare(b'\x08\x07garbage\xff\xff\xff')
    with pytest.raises(InvalidModelError, match='cannot read'):
        backend.prepare('/nonexistent/model.onnx')
    # A node reading a value nothing defines.
    model = make_model([helper.make_node('Relu', ['nowhere'], ['y'], name='r')],
                       [value('x', [2])], [value('y', [2])])
    with pytest.raises(InvalidModelError, match="'nowhere' is not produced"):
        backend.prepare(model)
    # An attribute of the wrong type.
    node = helper.make_node('Softmax', ['x'], ['y'], name='s')
    node.attribute.append(helper.make_attribute('axis', 1.5))
    model = make_model([node], [value('x', [2, 2])], [value('y', [2, 2])])
    with pytest.raises(InvalidModelError, match="attribute 'axis' should be INT but is FLOAT"):
        backend.prepare(model)
    # An initializer of an unknown element type, and one whose data is short.
    model, _, _ = fc_model()
    model.graph.initializer[0].data_type = 99
    with pytest.raises(UnsupportedError, match="initializer 'w': element type unknown"):
        backend.prepare(model)
    model, _, _ = fc_model()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-4]
    with pytest.raises(InvalidModelError, match="initializer 'w'.*bytes"):
        backend.prepare(model)
    # No default-domain opset; an opset out of range.
    model, _, _ = fc_model()
    del model.opset_import[:]
    with pytest.raises(InvalidModelError, match='opset'):
        backend.prepare(model)
    model, _, _ = fc_model()
    model.opset_import[0].version = 99
    with pytest.raises(UnsupportedError, match='opset 99'):
        backend.prepare(model)


def test_bad_run_inputs_are_clean_errors():
    model, _, _ = fc_model()
    rep = backend.prepare(model)
    with pytest.raises(InvalidInputError, match='missing'):
        rep.run({})
    with pytest.raises(InvalidInputError, match='declared float32'):
        rep.run([np.ones((2, 3), np.int32)])
    with pytest.raises(InvalidInputError, match='not inputs'):
        rep.run({'x': np.ones((2, 3), np.float32), 'w': np.ones(1)})
    # A wrong shape fails in the runtime, naming the op.
    with pytest.raises(RuntimeError, match='FC'):
        rep.run([np.ones((2, 5), np.float32)])
    assert issubclass(OnnxError, RuntimeError)


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
