"""doppio.onnx.frontend's contract at its edges: what cannot be exported
raises Unsupported naming the op's index, name and type; bad arguments
raise ValueError/TypeError naming the culprit; the API has Caffe2's names."""
import sys
import warnings

import numpy as np
import pytest
from onnx import GraphProto, TensorProto, numpy_helper

from caffe2.proto import caffe2_pb2
from caffe2.python import core
from doppio.onnx import frontend

try:
    from tests.onnx import frontend_export_util as util
except ImportError:  # run directly from the source tree
    import frontend_export_util as util

op = util.op
RNG = np.random.RandomState(5)
X = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)


def export(ops, inputs, params=None, outputs=None, opset=None, value_info=None):
    predict, init = util.make_nets(ops, inputs, params or {}, outputs or [ops[-1].output[0]])
    if value_info is None:
        value_info = util.value_info_for(inputs)
    return frontend.caffe2_net_to_onnx_model(predict, init, value_info, opset_version=opset)


# ---- unexportable ops ----

def test_an_op_without_translation_is_named_by_index_name_and_type():
    ops = [op('Relu', ['x'], ['r']),
           op('LabelCrossEntropy', ['r', 'label'], ['xent'], name='the_loss')]
    with pytest.raises(frontend.Unsupported) as e:
        export(ops, {'x': np.ones((2, 3), np.float32), 'label': np.zeros(2, np.int32)})
    message = str(e.value)
    assert "op #1 'the_loss' (type LabelCrossEntropy)" in message
    assert 'no ONNX translation' in message
    assert isinstance(e.value, ValueError)


def test_an_unnamed_op_is_named_by_index_and_type():
    with pytest.raises(frontend.Unsupported, match=r'op #0 \(type Print\)'):
        export([op('Print', ['x'], [])], {'x': X}, outputs=['x'])


@pytest.mark.parametrize('ops, params, words', [
    ([op('SpatialBN', ['x', 's', 'b', 'm', 'v'], ['y', 'm', 'v', 'sm', 'sv'], is_test=0)],
     dict(s=np.ones(3, np.float32), b=np.zeros(3, np.float32), m=np.zeros(3, np.float32),
          v=np.ones(3, np.float32)), ['op #0', 'SpatialBN', 'is_test=0']),
    ([op('Dropout', ['x'], ['y', 'mask'], ratio=0.5)], {}, ['op #0', 'Dropout', 'is_test=0']),
    ([op('Dropout', ['x'], ['y', 'mask'], is_test=1), op('Cast', ['mask'], ['z'], to=1)], {},
     ['op #0', 'Dropout', "'mask'"]),
    ([op('NCHW2NHWC', ['x'], ['t']),
      op('Conv', ['t', 'w'], ['y'], kernel=3, order='NHWC')],
     dict(w=np.ones((4, 3, 3, 3), np.float32)), ['op #1', 'Conv', 'NHWC']),
    ([op('AveragePool', ['x'], ['y'], kernel=3, stride=2, legacy_pad=3)], {},
     ['op #0', 'AveragePool', 'legacy_pad 3']),
])
def test_semantics_without_an_onnx_equivalent(ops, params, words):
    with pytest.raises(frontend.Unsupported) as e:
        export(ops, {'x': X}, params)
    for word in words:
        assert word in str(e.value)


def test_exportable_op_types_lists_the_table():
    types = frontend.exportable_op_types()
    assert {'Conv', 'SpatialBN', 'FC', 'Softmax', 'MaxPool', 'Relu'} <= set(types)
    assert 'LabelCrossEntropy' not in types


# ---- bad arguments ----

@pytest.mark.parametrize('opset, error', [(8, ValueError), (18, ValueError), ('13', TypeError),
                                          (True, TypeError)])
def test_opset_version_range(opset, error):
    with pytest.raises(error, match='opset_version'):
        export([op('Relu', ['x'], ['y'])], {'x': X}, opset=opset)


@pytest.mark.parametrize('value_info, words', [
    ([('x', (TensorProto.FLOAT, (2, 3)))], ['dict']),
    ({'x': TensorProto.FLOAT}, ["value_info['x']"]),
    ({'x': (TensorProto.FLOAT, (2, 'three'))}, ["value_info['x']"]),
    ({'x': (TensorProto.STRING, (2, 3))}, ["value_info['x']", 'type']),
    ({'x': (TensorProto.FLOAT, (2, -3))}, ['negative']),
    ({'x': (TensorProto.FLOAT, (2, 3)), 'y_typo': (TensorProto.FLOAT, (1,))}, ["'y_typo'"]),
])
def test_bad_value_info(value_info, words):
    with pytest.raises(ValueError) as e:
        export([op('Relu', ['x'], ['y'])], {'x': X}, value_info=value_info)
    for word in words:
        assert word in str(e.value)


def test_a_data_input_without_value_info_is_named():
    ops = [op('Add', ['x', 'z'], ['y'])]
    with pytest.raises(ValueError, match=r"op #0 \(type Add\) reads 'z'.*value_info"):
        export(ops, {'x': X, 'z': X}, value_info={'x': (TensorProto.FLOAT, X.shape)})


def test_an_op_that_fails_on_the_given_shapes_is_named():
    ops = [op('Relu', ['x'], ['r']), op('FC', ['r', 'w', 'b'], ['y'])]
    params = {'w': np.ones((4, 5), np.float32), 'b': np.ones(4, np.float32)}
    with pytest.raises(ValueError, match=r'op #1 \(type FC\) failed'):
        export(ops, {'x': X}, params)


def test_a_failing_init_net_is_named():
    predict, _ = util.make_nets([op('Relu', ['x'], ['y'])], {'x': X}, {}, ['y'])
    init = caffe2_pb2.NetDef()
    init.op.extend([op('GivenTensorFill', [], ['w'], shape=[2, 2], values=[1.0])])
    with pytest.raises(ValueError, match=r'init net op #0 \(type GivenTensorFill\)'):
        frontend.caffe2_net_to_onnx_model(predict, init, util.value_info_for({'x': X}))


def test_nets_of_the_wrong_type():
    with pytest.raises(TypeError, match='predict_net'):
        frontend.caffe2_net_to_onnx_model('not a net', None, {})
    predict, _ = util.make_nets([op('Relu', ['x'], ['y'])], {'x': X}, {}, ['y'])
    with pytest.raises(TypeError, match='init_net'):
        frontend.caffe2_net_to_onnx_model(predict, 42, util.value_info_for({'x': X}))


def test_an_external_output_no_op_writes_is_dropped_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = export([op('Relu', ['x'], ['y'])], {'x': X}, outputs=['y', 'x'])
    assert [o.name for o in model.graph.output] == ['y']
    assert any("'x'" in str(w.message) for w in caught)


# ---- Caffe2's API ----

def test_caffe2_entry_points():
    ops = [op('Relu', ['x'], ['h']), op('FC', ['h', 'w', 'b'], ['y'])]
    params = {'w': RNG.standard_normal((4, 108)).astype(np.float32),
              'b': RNG.standard_normal(4).astype(np.float32)}
    predict, init = util.make_nets(ops, {'x': X}, params, ['y'])
    value_info = util.value_info_for({'x': X})
    graph = frontend.caffe2_net_to_onnx_graph(predict, init, value_info)
    assert isinstance(graph, GraphProto)
    assert [n.op_type for n in graph.node] == ['Relu', 'Flatten', 'Gemm']
    # Given a core.Net, as Caffe2's frontend was.
    model = frontend.Caffe2Frontend.caffe2_net_to_onnx_model(core.Net(predict), init,
                                                             value_info)
    assert model.opset_import[0].version == frontend.Caffe2Frontend.target_opset_version
    initializers = frontend.caffe2_init_net_to_initializer(init)
    assert [t.name for t in initializers] == ['b', 'w']
    for tensor in initializers:
        np.testing.assert_array_equal(numpy_helper.to_array(tensor), params[tensor.name])


def test_value_info_may_describe_intermediate_blobs_as_in_caffe2():
    value_info = util.value_info_for({'x': X})
    value_info['r'] = (TensorProto.FLOAT, X.shape)
    model = export([op('Relu', ['x'], ['r']), op('Sigmoid', ['r'], ['y'])], {'x': X},
                   value_info=value_info)
    assert [i.name for i in model.graph.input] == ['x']
    assert [n.op_type for n in model.graph.node] == ['Relu', 'Sigmoid']


def test_any_init_net_doppio_runs_gives_the_initializers():
    predict, _ = util.make_nets([op('FC', ['x', 'w', 'b'], ['y'])], {'x': X[:, :, 0, 0]},
                                {}, ['y'])
    init = caffe2_pb2.NetDef()
    init.op.extend([op('XavierFill', [], ['w'], shape=[4, 3]),
                    op('ConstantFill', [], ['b'], shape=[4], value=0.25)])
    init.op[0].device_option.random_seed = 9
    model = frontend.caffe2_net_to_onnx_model(predict, init,
                                              util.value_info_for({'x': X[:, :, 0, 0]}))
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(values['b'], np.full(4, 0.25, np.float32))
    # Xavier: U(-sqrt(3 / fan_in), sqrt(3 / fan_in)), seeded as the op says.
    assert values['w'].shape == (4, 3) and np.abs(values['w']).max() <= 1.0
    assert len(np.unique(values['w'])) == 12
    # The values the caller's own run of the init net gives.
    from caffe2.python import workspace
    workspace.RunNetOnce(init)
    np.testing.assert_array_equal(values['w'], workspace.FetchBlob('w'))
    again = frontend.caffe2_init_net_to_initializer(init)
    np.testing.assert_array_equal(numpy_helper.to_array(again[1]), values['w'])


def test_ops_placed_on_a_gpu_export_on_any_machine():
    ops = [op('Relu', ['x'], ['y'])]
    ops[0].device_option.device_type = caffe2_pb2.CUDA
    model = export(ops, {'x': X})
    assert [n.op_type for n in model.graph.node] == ['Relu']


def test_the_oldest_ir_version_that_carries_the_opset():
    assert export([op('Relu', ['x'], ['y'])], {'x': X}, opset=9).ir_version == 4
    assert export([op('Relu', ['x'], ['y'])], {'x': X}, opset=17).ir_version == 8


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
