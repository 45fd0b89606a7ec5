"""Shared by the export tests: build a small Caffe2 net, run it in Doppio,
export it with doppio.onnx.frontend, and evaluate the ONNX model with the
independent numpy evaluator (onnx_numpy_reference)."""
import numpy as np
from onnx import TensorProto, checker

from caffe2.proto import caffe2_pb2
from caffe2.python import core, workspace
from caffe2.python.predictor import mobile_exporter
from doppio.onnx import frontend

try:
    from tests.onnx import onnx_numpy_reference as ref
except ImportError:  # run directly from the source tree
    import onnx_numpy_reference as ref

# The oldest opset the frontend targets, the Softmax/Clip/Unsqueeze
# boundaries (11, 13) and the newest python3-onnx knows.
OPSETS = [9, 11, 13, 17]

ONNX_TYPE = {
    np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.bool_): TensorProto.BOOL,
}
TEST_WORKSPACE = 'onnx_frontend_test'


def op(op_type, inputs, outputs, **args):
    return core.CreateOperator(op_type, inputs, outputs, **args)


def make_nets(ops, inputs, params, outputs):
    """(predict_net, init_net): `params` filled by GivenTensor*Fill ops, as
    mobile_exporter writes them."""
    predict = caffe2_pb2.NetDef()
    predict.name = 'under_test'
    predict.op.extend(ops)
    predict.external_input.extend(list(inputs) + list(params))
    predict.external_output.extend(outputs)
    init = caffe2_pb2.NetDef()
    init.name = 'under_test_init'
    for name, value in params.items():
        mobile_exporter.add_tensor(init, name, value)
    return predict, init


def value_info_for(inputs):
    return {name: (ONNX_TYPE[value.dtype], value.shape) for name, value in inputs.items()}


def run_doppio(predict, init, inputs):
    """The net's external outputs computed by Doppio, in a workspace of
    the test's own."""
    previous = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace(TEST_WORKSPACE, True)
    try:
        workspace.ResetWorkspace()
        if init is not None:
            workspace.RunNetOnce(init)
        for name, value in inputs.items():
            workspace.FeedBlob(name, value)
        workspace.RunNetOnce(predict)
        return {name: workspace.FetchBlob(name) for name in predict.external_output}
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace(previous, True)


def export(predict, init, inputs, opset):
    """The exported model, checked by onnx.checker with strict shape
    inference: ONNX itself must infer the output shapes the model declares."""
    model = frontend.caffe2_net_to_onnx_model(predict, init, value_info_for(inputs),
                                              opset_version=opset)
    checker.check_model(model, full_check=True)
    return model


def assert_same(actual, expected, what, rtol=1e-5, atol=1e-5):
    assert actual.shape == expected.shape, '{}: shape {} != {}'.format(
        what, actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, '{}: dtype {} != {}'.format(
        what, actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def check_export(ops, inputs, params=None, outputs=None, opsets=OPSETS, rtol=1e-5,
                 atol=1e-5):
    """Exports the net at each opset and checks the numpy evaluation of the
    ONNX model against Doppio's outputs; returns the last model."""
    params = params or {}
    outputs = outputs or [ops[-1].output[0]]
    predict, init = make_nets(ops, inputs, params, outputs)
    expected = run_doppio(predict, init, inputs)
    model = None
    for opset in opsets:
        model = export(predict, init, inputs, opset)
        got = ref.run_model(model, inputs)
        assert sorted(got) == sorted(outputs)
        for name in outputs:
            assert_same(got[name], expected[name], '{} at opset {}'.format(name, opset),
                        rtol, atol)
    return model


# ---- trained reference models (docs/DESIGN.md section 8) ----

TRAIN_WORKSPACE = 'onnx_frontend_training'


def _add_reference_mlp(model, data):
    """The reference MLP: FC 784-256-128-10 with Relu (FC flattens the
    [N, 1, 28, 28] images itself, axis=1)."""
    from caffe2.python import brew
    from python_api.examples import fmnist_train as example
    hidden = data
    for name, dim_in, dim_out in (('fc1', 784, 256), ('fc2', 256, 128)):
        hidden = brew.fc(model, hidden, name, dim_in=dim_in, dim_out=dim_out,
                         **example.uniform_init(dim_in))
        hidden = brew.relu(model, hidden, hidden)
    pred = brew.fc(model, hidden, 'pred', dim_in=128, dim_out=10, **example.uniform_init(128))
    return brew.softmax(model, pred, 'softmax')


def _add_classifier(kind, model, data, is_test):
    from python_api.examples import fmnist_train as example
    if kind == 'cnn':
        return example.add_reference_cnn(model, data, is_test=is_test)
    return _add_reference_mlp(model, data)


def train_reference_model(kind, steps, batch=64, test_images=200):
    """Trains the reference CNN or MLP for `steps` SGD steps on Fashion-MNIST
    (as the example does: uint8 pixels standardized in the net, momentum
    SGD at lr 0.05), then extracts its test-mode predict net from the input
    `data_uint8` to `softmax` and exports the init net with mobile_exporter.

    Returns (predict_net, init_net, images, labels, losses): the test images
    and labels are the first `test_images` of the test set."""
    from caffe2.python import model_helper, optimizer
    from python_api.examples import fmnist_train as example
    args = example.parse_args(['--workdir', '/nonexistent'])
    images, labels = example.read_idx(args, 'train', steps * batch)
    x_test, y_test = example.read_idx(args, 'test', test_images)

    previous = workspace.CurrentWorkspace()
    workspace.SwitchWorkspace(TRAIN_WORKSPACE, True)
    try:
        workspace.ResetWorkspace()
        train = model_helper.ModelHelper(name='train_' + kind)
        train.param_init_net.ConstantFill([], 'pixel_shift', shape=[1],
                                          value=-example.PIXEL_MEAN / example.PIXEL_STD)
        data = example.add_preprocessing(train, 'data_uint8')
        softmax = _add_classifier(kind, train, data, is_test=0)
        loss = example.add_loss_and_accuracy(train, softmax, 'label')
        train.AddGradientOperators([loss])
        optimizer.build_sgd(train, base_learning_rate=0.05, policy='fixed', momentum=0.9,
                            nesterov=False)
        for op_def in train.param_init_net.Proto().op:
            op_def.device_option.random_seed = 5
        workspace.RunNetOnce(train.param_init_net)
        workspace.FeedBlob('data_uint8', images[:batch])
        workspace.FeedBlob('label', labels[:batch])
        workspace.CreateNet(train.net)
        losses = []
        for step in range(steps):
            workspace.FeedBlob('data_uint8', images[step * batch:(step + 1) * batch])
            workspace.FeedBlob('label', labels[step * batch:(step + 1) * batch])
            workspace.RunNet(train.net.Proto().name)
            losses.append(float(workspace.FetchBlob('loss')))

        deploy = model_helper.ModelHelper(name='deploy_' + kind, init_params=False)
        _add_classifier(kind, deploy, example.add_preprocessing(deploy, 'data_uint8'),
                        is_test=1)
        predict_net, external = model_helper.ExtractPredictorNet(
            deploy.net.Proto(), ['data_uint8'], ['softmax'])
        params = [b for b in external if b != 'data_uint8']
        init_net, predict_net = mobile_exporter.Export(workspace, predict_net, params)
        return predict_net, init_net, x_test, y_test, losses
    finally:
        workspace.ResetWorkspace()
        workspace.SwitchWorkspace(previous, True)
