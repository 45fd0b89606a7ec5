"""The reference CNN and MLP (docs/DESIGN.md section 8), trained for a few dozen
SGD steps on Fashion-MNIST, extracted with ExtractPredictorNet, exported
with mobile_exporter and then to ONNX: the model passes onnx.checker, has
the net's input, output and parameter names, and the independent numpy
evaluator of the ONNX model predicts what Doppio predicts."""
import sys

import numpy as np
import pytest
from onnx import TensorProto

try:
    from tests.onnx import frontend_export_util as util
except ImportError:  # run directly from the source tree
    import frontend_export_util as util

STEPS = 30
CNN_PARAMS = ['pixel_shift', 'conv1_w', 'conv1_b', 'bn1_s', 'bn1_b', 'bn1_rm', 'bn1_riv',
              'conv2_w', 'conv2_b', 'bn2_s', 'bn2_b', 'bn2_rm', 'bn2_riv', 'fc3_w', 'fc3_b',
              'pred_w', 'pred_b']


@pytest.fixture(scope='module', params=['cnn', 'mlp'])
def trained(request):
    predict, init, images, labels, losses = util.train_reference_model(request.param, STEPS)
    expected = util.run_doppio(predict, init, {'data_uint8': images})['softmax']
    return request.param, predict, init, images, labels, losses, expected


def test_training_moved_the_model(trained):
    # Otherwise agreement below could be agreement of untrained nets.
    _, _, _, images, labels, losses, expected = trained
    assert losses[0] > 2.0 and np.mean(losses[-5:]) < 1.5
    assert np.mean(expected.argmax(axis=1) == labels) > 0.5


@pytest.mark.parametrize('opset', [9, 13, 17])
def test_onnx_model_predicts_what_doppio_predicts(trained, opset):
    kind, predict, init, images, _, _, expected = trained
    model = util.export(predict, init, {'data_uint8': images}, opset)
    got = util.ref.run_model(model, {'data_uint8': images})['softmax']
    util.assert_same(got, expected, '{} softmax at opset {}'.format(kind, opset),
                     rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got.argmax(axis=1), expected.argmax(axis=1))


def test_model_interface_is_the_nets(trained):
    kind, predict, init, images, _, _, _ = trained
    model = util.export(predict, init, {'data_uint8': images}, 17)
    graph = model.graph
    assert [(i.name, i.type.tensor_type.elem_type) for i in graph.input] == \
        [('data_uint8', TensorProto.UINT8)]
    assert [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] == \
        list(images.shape)
    assert [o.name for o in graph.output] == ['softmax']
    assert [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim] == \
        [len(images), 10]
    initializers = {t.name for t in graph.initializer}
    if kind == 'cnn':
        assert set(CNN_PARAMS) <= initializers
        ops = [n.op_type for n in graph.node]
        assert ops.count('Conv') == 2 and ops.count('BatchNormalization') == 2
        assert ops.count('MaxPool') == 2 and ops.count('Gemm') == 2
    else:
        assert {'fc1_w', 'fc1_b', 'fc2_w', 'fc2_b', 'pred_w', 'pred_b'} <= initializers
    # The data placeholder mobile_exporter puts in the init net is an
    # input, not an initializer.
    assert 'data_uint8' not in initializers
    assert model.producer_name == 'doppio'


def test_export_leaves_the_callers_nets_and_workspace_alone(trained):
    from caffe2.python import workspace
    _, predict, init, images, _, _, _ = trained
    before = (predict.SerializeToString(), init.SerializeToString())
    workspace.FeedBlob('marker', np.arange(3, dtype=np.float32))
    current = workspace.CurrentWorkspace()
    util.export(predict, init, {'data_uint8': images}, 17)
    assert (predict.SerializeToString(), init.SerializeToString()) == before
    assert workspace.CurrentWorkspace() == current
    assert workspace.Blobs() == ['marker']


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
