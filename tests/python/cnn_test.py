"""doppio.cnn.CNNModelHelper: its layer methods build exactly what the brew
helpers build on a ModelHelper with the same arg_scope, and a small CNN
trained one step with it (weight decay + momentum SGD) lands where a brew
model given the same initial parameters lands."""
import sys

import numpy as np
import pytest

from doppio import brew, cnn, model_helper, optimizer, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    yield
    workspace.ResetWorkspace()


def ops_of(net):
    """The ops without the net name, which is made unique per net."""
    return [op.SerializeToString() for op in net.Proto().op]


def build_with_cnn(model):
    model.Conv("data", "conv1", 1, 4, 3, pad=1)
    model.SpatialBN("conv1", "bn1", 4, epsilon=1e-3)
    model.Relu("bn1", "relu1")
    model.MaxPool("relu1", "pool1", kernel=2, stride=2)
    model.AveragePool("pool1", "apool1", kernel=1, stride=1)
    model.Concat(["pool1", "apool1"], "concat1")
    model.Dropout("concat1", "drop1", ratio=0.5, is_test=True)
    model.FC("drop1", "fc1", 8 * 3 * 3, 5)
    model.Sum(["fc1", "fc1"], "sum1")
    return model.Softmax("sum1", "prob")


def build_with_brew(model):
    brew.conv(model, "data", "conv1", 1, 4, 3, pad=1)
    brew.spatial_bn(model, "conv1", "bn1", 4, epsilon=1e-3)
    brew.relu(model, "bn1", "relu1")
    brew.max_pool(model, "relu1", "pool1", kernel=2, stride=2)
    brew.average_pool(model, "pool1", "apool1", kernel=1, stride=1)
    brew.concat(model, ["pool1", "apool1"], "concat1")
    brew.dropout(model, "concat1", "drop1", ratio=0.5, is_test=True)
    brew.fc(model, "drop1", "fc1", 8 * 3 * 3, 5)
    brew.sum(model, ["fc1", "fc1"], "sum1")
    return brew.softmax(model, "sum1", "prob")


@pytest.mark.parametrize("use_cudnn", [True, False])
@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_layers_build_the_brew_net(use_cudnn, order):
    cnn_model = cnn.CNNModelHelper(order=order, name="cnn", use_cudnn=use_cudnn)
    build_with_cnn(cnn_model)
    brew_model = model_helper.ModelHelper(
        name="brew", arg_scope={"order": order, "use_cudnn": use_cudnn,
                                "cudnn_exhaustive_search": False})
    build_with_brew(brew_model)
    assert ops_of(cnn_model.net) == ops_of(brew_model.net)
    assert ops_of(cnn_model.param_init_net) == ops_of(brew_model.param_init_net)
    assert [str(p) for p in cnn_model.params] == [str(p) for p in brew_model.params]
    assert [str(p) for p in cnn_model.GetWeights()] == ["conv1_w", "bn1_s", "fc1_w"]
    conv = cnn_model.net.Proto().op[0]
    assert conv.type == "Conv"
    assert conv.engine == ("CUDNN" if use_cudnn else "")
    assert {a.name: a.s.decode() for a in conv.arg if a.name == "order"} == {"order": order}


def test_defaults_and_caffe2_properties():
    model = cnn.CNNModelHelper()
    assert model.name == "CNN" and model.order == "NCHW" and model.use_cudnn
    assert model.arg_scope["order"] == "NCHW"
    assert model.XavierInit == ("XavierFill", {})
    assert model.MSRAInit == ("MSRAFill", {})
    assert model.ZeroInit == ("ConstantFill", {})
    assert model.ConstantInit(0.5) == ("ConstantFill", {"value": 0.5})
    assert model.CPU.device_type == 0
    assert model.GPU.device_type == 1
    limited = cnn.CNNModelHelper(ws_nbytes_limit=1 << 20)
    limited.Conv("data", "c", 1, 2, 3)
    args = {a.name: a.i for a in limited.net.Proto().op[0].arg if a.HasField("i")}
    assert args["ws_nbytes_limit"] == 1 << 20


def test_depth_concat_lrn_iter_accuracy_transpose_group_conv():
    model = cnn.CNNModelHelper(use_cudnn=False)
    out = model.DepthConcat(["a", "b"], "ab")
    assert str(out) == "ab"
    concat = model.net.Proto().op[-1]
    assert concat.type == "Concat" and list(concat.output) == ["ab", "_ab_concat_dims"]
    model.LRN("ab", "norm", size=5, alpha=1e-4, beta=0.75)
    lrn = model.net.Proto().op[-1]
    assert lrn.type == "LRN" and list(lrn.output) == ["norm", "_norm_scale"]
    model.Accuracy(["prob", "label"], "accuracy")
    assert model.net.Proto().op[-1].type == "Accuracy"
    model.Iter("iter")
    fill = model.param_init_net.Proto().op[-1]
    assert fill.type == "ConstantFill" and list(fill.output) == ["iter"]
    assert model.net.Proto().op[-1].type == "Iter"
    model.Transpose("ab", "abt", axes=[0, 2, 3, 1])
    assert model.net.Proto().op[-1].type == "Transpose"
    model.GroupConv("data", "gconv", 4, 6, 3, group=2)
    assert list(model.get_param_info(model.params[-2]).shape) == [6, 2, 3, 3]
    gconv_args = {a.name: a.i for a in model.net.Proto().op[-1].arg if a.HasField("i")}
    assert gconv_args["group"] == 2


def test_lrn_runs_like_numpy():
    model = cnn.CNNModelHelper(use_cudnn=False)
    model.LRN("x", "y", size=3, alpha=0.1, beta=0.75, bias=1.0)
    x = np.random.RandomState(0).randn(2, 5, 2, 2).astype(np.float32)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(model.net)
    squares = np.pad(x.astype(np.float64) ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = squares[:, 0:5] + squares[:, 1:6] + squares[:, 2:7]
    expected = x / (1.0 + 0.1 / 3 * window) ** 0.75
    np.testing.assert_allclose(workspace.FetchBlob("y"), expected, rtol=1e-5, atol=1e-6)


def test_bad_order_is_an_error():
    with pytest.raises(ValueError, match="NWHC"):
        cnn.CNNModelHelper(order="NWHC")


def train_one_step(model, build, params, data, label):
    prob = build(model)
    xent = model.net.LabelCrossEntropy([prob, "label"], "xent")
    loss = model.net.AveragedLoss(xent, "loss")
    model.AddGradientOperators([loss])
    if isinstance(model, cnn.CNNModelHelper):
        model.AddWeightDecay(1e-2)
    else:
        optimizer.add_weight_decay(model, 1e-2)
    optimizer.build_sgd(model, 0.1, momentum=0.9)
    workspace.RunNetOnce(model.param_init_net)
    for name, value in params.items():
        workspace.FeedBlob(name, value)
    workspace.FeedBlob("data", data)
    workspace.FeedBlob("label", label)
    workspace.RunNetOnce(model.net)
    return {name: workspace.FetchBlob(name) for name in params}


def test_one_training_step_equals_the_brew_model():
    rng = np.random.RandomState(3)
    data = rng.rand(4, 1, 6, 6).astype(np.float32)
    label = rng.randint(0, 5, size=4).astype(np.int32)
    params = {
        "conv1_w": rng.randn(4, 1, 3, 3).astype(np.float32) * 0.3,
        "conv1_b": rng.randn(4).astype(np.float32) * 0.1,
        "bn1_s": np.ones(4, np.float32) + 0.1 * rng.randn(4).astype(np.float32),
        "bn1_b": rng.randn(4).astype(np.float32) * 0.1,
        "fc1_w": rng.randn(5, 72).astype(np.float32) * 0.1,
        "fc1_b": np.zeros(5, np.float32),
    }
    after_cnn = train_one_step(cnn.CNNModelHelper(use_cudnn=False), build_with_cnn,
                               params, data, label)
    workspace.ResetWorkspace()
    optimizer.reset_optimizer_instance_count()
    brew_model = model_helper.ModelHelper(name="brew", arg_scope={"use_cudnn": False})
    after_brew = train_one_step(brew_model, build_with_brew, params, data, label)
    for name in params:
        # conv1_b feeds batch norm, which cancels it: its gradient is ~0.
        if name != "conv1_b":
            assert not np.allclose(after_cnn[name], params[name]), name + " did not train"
        np.testing.assert_allclose(after_cnn[name], after_brew[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_caffe2_alias_is_the_same_module():
    from caffe2.python import cnn as caffe2_cnn
    from caffe2.python import optimizer as caffe2_optimizer
    assert caffe2_cnn is cnn
    assert caffe2_optimizer is optimizer
    assert caffe2_cnn.CNNModelHelper is cnn.CNNModelHelper


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
