"""A training script written for Caffe2 -- its imports, model_helper, brew,
optimizer, ExtractPredictorNet and mobile_exporter exactly as Caffe2's
tutorials use them -- trains a small classifier on Doppio, and the serving
net it extracts gives the same predictions as numpy applied to the trained
weights."""
import sys

import numpy as np
import pytest

from caffe2.proto import caffe2_pb2
from caffe2.python import brew, core, model_helper, optimizer, workspace
from caffe2.python.predictor import mobile_exporter


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def blobs_dataset(n, seed):
    """Three Gaussian clusters in 4-D: linearly separable enough that a
    small MLP reaches high accuracy in a few hundred steps."""
    rng = np.random.RandomState(seed)
    centers = np.array([[2, 0, 0, 1], [0, 2, 0, -1], [0, 0, 2, 0]], np.float32)
    labels = rng.randint(0, 3, size=n).astype(np.int32)
    data = centers[labels] + 0.6 * rng.randn(n, 4).astype(np.float32)
    return data, labels


def build_mlp(model, data, is_test):
    hidden = brew.fc(model, data, 'hidden', dim_in=4, dim_out=16)
    hidden = brew.relu(model, hidden, hidden)
    hidden = brew.dropout(model, hidden, 'hidden_dropped', ratio=0.1, is_test=is_test)
    pred = brew.fc(model, hidden, 'pred', dim_in=16, dim_out=3)
    return brew.softmax(model, pred, 'softmax')


def test_caffe2_style_training_and_serving():
    x_train, y_train = blobs_dataset(512, seed=0)
    x_test, y_test = blobs_dataset(256, seed=1)

    train_model = model_helper.ModelHelper(name='train')
    softmax = build_mlp(train_model, 'data', is_test=0)
    xent = train_model.LabelCrossEntropy([softmax, 'label'], 'xent')
    loss = train_model.AveragedLoss(xent, 'loss')
    brew.accuracy(train_model, [softmax, 'label'], 'accuracy')
    train_model.AddGradientOperators([loss])
    optimizer.build_sgd(train_model, base_learning_rate=0.1, policy='step',
                        stepsize=200, gamma=0.5, momentum=0.9)

    test_model = model_helper.ModelHelper(name='test', init_params=False)
    build_mlp(test_model, 'data', is_test=1)

    workspace.FeedBlob('data', x_train[:32])
    workspace.FeedBlob('label', y_train[:32])
    # Random fills draw from the OS without a seed, as in Caffe2.
    train_model.param_init_net.Proto().device_option.random_seed = 7
    workspace.RunNetOnce(train_model.param_init_net)
    workspace.CreateNet(train_model.net, overwrite=True)
    losses = []
    for step in range(300):
        batch = np.arange(step * 32, step * 32 + 32) % len(x_train)
        workspace.FeedBlob('data', x_train[batch])
        workspace.FeedBlob('label', y_train[batch])
        workspace.RunNet(train_model.net)
        losses.append(float(workspace.FetchBlob('loss')))
    assert np.mean(losses[-20:]) < 0.2
    assert np.mean(losses[:5]) > 3 * np.mean(losses[-20:])

    # Serving: Caffe2's ExtractPredictorNet from the test model, then
    # mobile_exporter's init + predict nets, run in a fresh workspace.
    predict_net, inputs = model_helper.ExtractPredictorNet(
        test_model.net.Proto(), input_blobs=['data'], output_blobs=['softmax'])
    # The blobs to export: the parameters, not the input (Caffe2's contract).
    assert 'data' not in inputs and 'data' in predict_net.Proto().external_input
    assert set(inputs) == set(str(p) for p in train_model.GetParams())
    assert [op.type for op in predict_net.Proto().op] == \
        ['FC', 'Relu', 'Dropout', 'FC', 'Softmax']
    params = train_model.GetParams()
    weights = {str(p): workspace.FetchBlob(str(p)) for p in params}
    init_net, predict_proto = mobile_exporter.Export(workspace, predict_net, params)
    init_bytes, predict_bytes = init_net.SerializeToString(), predict_proto.SerializeToString()

    workspace.SwitchWorkspace('serving', True)
    try:
        workspace.RunNetOnce(caffe2_pb2.NetDef.FromString(init_bytes))
        workspace.FeedBlob('data', x_test)
        workspace.RunNetOnce(caffe2_pb2.NetDef.FromString(predict_bytes))
        probs = workspace.FetchBlob('softmax')
    finally:
        workspace.SwitchWorkspace('default')

    hidden = np.maximum(x_test @ weights['hidden_w'].T + weights['hidden_b'], 0)
    logits = hidden @ weights['pred_w'].T + weights['pred_b']
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=1e-4, atol=1e-6)
    assert np.mean(probs.argmax(1) == y_test) > 0.9


def test_extract_predictor_net_refuses_train_mode_ops_and_bad_blobs():
    train_model = model_helper.ModelHelper(name='train_mode')
    build_mlp(train_model, 'data', is_test=0)
    with pytest.raises(ValueError, match='is_test=0'):
        model_helper.ExtractPredictorNet(train_model.net.Proto(), ['data'], ['softmax'])
    test_model = model_helper.ModelHelper(name='test_mode', init_params=False)
    build_mlp(test_model, 'data', is_test=1)
    with pytest.raises(ValueError, match='reads'):
        model_helper.ExtractPredictorNet(test_model.net.Proto(), ['nope'], ['softmax'])
    with pytest.raises(ValueError, match='writes'):
        model_helper.ExtractPredictorNet(test_model.net.Proto(), ['data'], ['nope'])
    renamed, _ = model_helper.ExtractPredictorNet(
        test_model.net, ['data'], ['softmax'], renames={'softmax': 'prob'},
        device=core.DeviceOption(caffe2_pb2.CPU))
    assert renamed.Proto().op[-1].output[0] == 'prob'
    assert list(renamed.Proto().external_output) == ['prob']


def test_mobile_exporter_refuses_missing_params_and_odd_dtypes():
    net = core.Net('exp')
    net.FC(['data', 'w', 'b'], 'y')
    with pytest.raises(KeyError, match='w'):
        mobile_exporter.Export(workspace, net, ['w', 'b'])
    init = caffe2_pb2.NetDef()
    with pytest.raises(TypeError, match='uint16'):
        mobile_exporter.add_tensor(init, 'odd', np.zeros(3, np.uint16))
    for value in (np.arange(6, dtype=np.int64).reshape(2, 3), np.array([True, False]),
                  np.array([1.5, -2.0]), np.array([b'a', b'bc'], dtype=object)):
        init = caffe2_pb2.NetDef()
        mobile_exporter.add_tensor(init, 'v', value)
        workspace.RunNetOnce(init)
        got = workspace.FetchBlob('v')
        assert got.shape == value.shape
        assert list(got.ravel()) == list(value.ravel())


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))
