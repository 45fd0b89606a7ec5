"""caffe2.python.predictor.predictor_exporter: a model exported to a DB is
served by another workspace from the DB alone, and the MetaNetDef inside
has Caffe2's layout (checked field by field, and against numpy)."""
import sys

import numpy as np
import pytest

from caffe2.proto import caffe2_pb2, metanet_pb2
from caffe2.python import brew, core, model_helper, workspace
from caffe2.python.predictor import predictor_exporter as pe
from caffe2.python.predictor import predictor_py_utils as pred_utils
from caffe2.python.predictor_constants import predictor_constants as pc


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def _trained_mlp():
    """A 2-layer MLP with random weights in the workspace; its export meta."""
    model = model_helper.ModelHelper(name='exported_mlp')
    hidden = brew.fc(model, 'data', 'hidden', 6, 5)
    relu = brew.relu(model, hidden, 'hidden_relu')
    brew.fc(model, relu, 'y', 5, 3)
    workspace.RunNetOnce(model.param_init_net)
    rng = np.random.RandomState(3)
    for param in model.params:
        shape = workspace.FetchBlob(str(param)).shape
        workspace.FeedBlob(str(param), rng.randn(*shape).astype(np.float32))
    meta = pe.PredictorExportMeta(predict_net=model.net, parameters=model.params,
                                  inputs=['data'], outputs=['y'],
                                  shapes={'data': (1, 6), 'y': (1, 3)})
    return model, meta


def _numpy_mlp(params, x):
    hidden = np.maximum(x @ params['hidden_w'].T + params['hidden_b'], 0.0)
    return hidden @ params['y_w'].T + params['y_b']


def test_export_then_serve_from_the_db_alone(tmp_path):
    model, meta = _trained_mlp()
    params = {str(p): workspace.FetchBlob(str(p)) for p in model.params}
    path = str(tmp_path / 'mlp.minidb')
    pe.save_to_db('minidb', path, meta)

    workspace.ResetWorkspace()
    predict_net = pe.prepare_prediction_net(path, 'minidb')
    # The predict init net created the input and output, zero-filled.
    np.testing.assert_array_equal(workspace.FetchBlob('data'), np.zeros((1, 6)))
    for name, value in params.items():
        np.testing.assert_array_equal(workspace.FetchBlob(name), value)
    x = np.random.RandomState(5).randn(4, 6).astype(np.float32)
    workspace.FeedBlob('data', x)
    workspace.RunNet(predict_net.Proto().name)
    np.testing.assert_allclose(workspace.FetchBlob('y'), _numpy_mlp(params, x),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('optimize', [True, False])
def test_prepare_prediction_net_applies_the_inference_passes_unless_told_not_to(
        tmp_path, optimize):
    model, meta = _trained_mlp()
    params = {str(p): workspace.FetchBlob(str(p)) for p in model.params}
    path = str(tmp_path / 'mlp.minidb')
    pe.save_to_db('minidb', path, meta)
    workspace.ResetWorkspace()
    predict_net = pe.prepare_prediction_net(path, 'minidb', optimize=optimize)
    types = [op.type for op in predict_net.Proto().op]
    # FC + Relu runs as one FC with a fused activation when optimizing.
    assert types == (['FC', 'FC'] if optimize else ['FC', 'Relu', 'FC'])
    assert list(predict_net.Proto().external_output) == ['y']
    x = np.random.RandomState(6).randn(3, 6).astype(np.float32)
    workspace.FeedBlob('data', x)
    workspace.RunNet(predict_net.Proto().name)
    np.testing.assert_allclose(workspace.FetchBlob('y'), _numpy_mlp(params, x),
                               rtol=1e-5, atol=1e-5)


def test_meta_net_def_layout(tmp_path):
    model, meta = _trained_mlp()
    model.net.Proto().arg.add(name='model_id', i=42)
    meta = pe.PredictorExportMeta(predict_net=model.net, parameters=model.params,
                                  inputs=['data'], outputs=['y'],
                                  shapes={'data': (1, 6), 'y': (1, 3)}, net_type='dag',
                                  num_workers=3)
    path = str(tmp_path / 'mlp.minidb')
    pe.save_to_db('minidb', path, meta)
    workspace.ResetWorkspace()
    meta_net_def = pe.load_from_db(path, 'minidb')
    assert isinstance(meta_net_def, metanet_pb2.MetaNetDef)
    assert [entry.key for entry in meta_net_def.nets] == [
        'PREDICT_INIT_NET_TYPE', 'GLOBAL_INIT_NET_TYPE', 'PREDICT_NET_TYPE']
    assert {entry.key: list(entry.value) for entry in meta_net_def.blobs} == {
        'PARAMETERS_BLOB_TYPE': ['hidden_w', 'hidden_b', 'y_w', 'y_b'],
        'INPUTS_BLOB_TYPE': ['data'], 'OUTPUTS_BLOB_TYPE': ['y']}

    global_init = pred_utils.GetNet(meta_net_def, pc.GLOBAL_INIT_NET_TYPE)
    assert [op.type for op in global_init.op] == ['Load']
    assert list(global_init.op[0].input) == ['!!PREDICTOR_DBREADER']
    assert list(global_init.op[0].output) == ['hidden_w', 'hidden_b', 'y_w', 'y_b']

    predict_init = pred_utils.GetNet(meta_net_def, pc.PREDICT_INIT_NET_TYPE)
    fills = {op.output[0]: [a for a in op.arg if a.name == 'shape'][0].ints
             for op in predict_init.op}
    assert fills == {'data': [1, 6], 'y': [1, 3]}

    predict = pred_utils.GetNet(meta_net_def, pc.PREDICT_NET_TYPE)
    assert [op.type for op in predict.op] == ['FC', 'Relu', 'FC']
    assert list(predict.external_input) == ['data', 'hidden_w', 'hidden_b', 'y_w', 'y_b']
    assert list(predict.external_output) == ['y']
    assert predict.type == 'dag' and predict.num_workers == 3
    # The predict net's model_id travels to both init nets.
    for net in (global_init, predict_init, predict):
        assert pred_utils.GetArgumentByName(net, 'model_id').i == 42


def test_device_option_on_load(tmp_path):
    _, meta = _trained_mlp()
    path = str(tmp_path / 'mlp.minidb')
    pe.save_to_db('minidb', path, meta)
    device = core.DeviceOption(caffe2_pb2.CPU, 0, random_seed=7)
    meta_net_def = pe.load_from_db(path, 'minidb', device_option=device)
    for entry in meta_net_def.nets:
        for op in entry.value.op:
            assert op.device_option.random_seed == 7


def test_component_names_and_shapes_from_the_workspace():
    model, _ = _trained_mlp()
    helper = pe.get_predictor_exporter_helper('second')
    assert helper.predict_net_name() == 'PREDICT_NET_TYPE_second'
    assert helper.parameters_name() == 'PARAMETERS_BLOB_TYPE_second'
    assert helper.train_plan_name() == 'TRAIN_PLAN_TYPE_second'
    assert pc.META_NET_DEF == '!!META_NET_DEF'
    # Without shapes the export reads them from the workspace.
    workspace.FeedBlob('data', np.ones((2, 6), np.float32))
    workspace.RunNetOnce(model.net)
    meta = pe.PredictorExportMeta(model.net, model.params, ['data'], ['y'])
    init = pred_utils.GetNet(pe.get_meta_net_def(meta), pc.PREDICT_INIT_NET_TYPE)
    assert [list([a for a in op.arg if a.name == 'shape'][0].ints) for op in init.op] == [
        [2, 6], [2, 3]]


def test_bad_exports_are_refused_by_name():
    model, _ = _trained_mlp()
    with pytest.raises(ValueError, match='distinct'):
        pe.PredictorExportMeta(model.net, model.params, ['data', 'data'], ['y'])
    with pytest.raises(ValueError, match='hidden_w'):
        pe.PredictorExportMeta(model.net, model.params, ['hidden_w'], ['y'])
    with pytest.raises(ValueError, match='y_b'):
        pe.PredictorExportMeta(model.net, model.params, ['data'], ['y_b'])
    with pytest.raises(TypeError, match='predict_net'):
        pe.PredictorExportMeta('not a net', model.params, ['data'], ['y'])
    meta = pe.PredictorExportMeta(model.net, model.params, ['absent'], ['y'])
    with pytest.raises(KeyError, match='absent'):
        pe.get_meta_net_def(meta)


def test_a_db_without_a_meta_net_def_is_a_clear_error(tmp_path):
    _trained_mlp()
    path = str(tmp_path / 'plain.minidb')
    workspace.RunOperatorOnce(core.CreateOperator(
        'Save', ['y_w'], [], absolute_path=True, db=path, db_type='minidb'))
    with pytest.raises(RuntimeError, match='META_NET_DEF'):
        pe.load_from_db(path, 'minidb')


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
