"""doppio.brew: each helper's parameters (Caffe2's names, shapes and fill
ops), its operator and arguments, arg scopes, and a tiny CNN whose forward
pass is checked against numpy."""
import sys

import numpy as np
import pytest

from doppio import brew, core, model_helper, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def names(blobs):
    return [str(b) for b in blobs]


def args_of(op):
    result = {}
    for a in op.arg:
        if a.HasField("f"):
            result[a.name] = a.f
        elif a.HasField("i"):
            result[a.name] = a.i
        elif a.HasField("s"):
            result[a.name] = a.s.decode()
        else:
            result[a.name] = list(a.ints) or list(a.floats)
    return result


def init_ops(model):
    return {op.output[0]: op for op in model.param_init_net.Proto().op}


def test_fc_params_and_op():
    model = model_helper.ModelHelper(name="brew_fc")
    out = brew.fc(model, "x", "fc1", dim_in=5, dim_out=3, axis=1)
    assert str(out) == "fc1"
    assert names(model.params) == ["fc1_w", "fc1_b"]
    ops = init_ops(model)
    assert ops["fc1_w"].type == "XavierFill" and args_of(ops["fc1_w"])["shape"] == [3, 5]
    assert ops["fc1_b"].type == "ConstantFill" and args_of(ops["fc1_b"])["shape"] == [3]
    op = model.net.Proto().op[0]
    assert op.type == "FC" and list(op.input) == ["x", "fc1_w", "fc1_b"]
    assert list(op.output) == ["fc1"]
    # The model's arg_scope reaches helpers that take **kwargs, as in Caffe2.
    assert args_of(op)["axis"] == 1 and args_of(op)["order"] == "NCHW"


def test_fc_custom_initializers():
    model = model_helper.ModelHelper(name="brew_fc_init")
    brew.fc(model, "x", "a", 2, 3, weight_init=("GaussianFill", {"std": 0.5}),
            bias_init=("ConstantFill", {"value": 0.25}))
    brew.fc(model, "x", "b", 2, 3,
            WeightInitializer=model_helper.Initializer("MSRAFill"))
    ops = init_ops(model)
    assert ops["a_w"].type == "GaussianFill" and args_of(ops["a_w"])["std"] == 0.5
    assert args_of(ops["a_b"])["value"] == 0.25
    assert ops["b_w"].type == "MSRAFill"
    workspace.RunNetOnce(model.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("a_b"), np.full(3, 0.25, np.float32))


def test_conv_params_nchw_nhwc_and_no_bias():
    model = model_helper.ModelHelper(name="brew_conv")
    brew.conv(model, "x", "c1", dim_in=4, dim_out=8, kernel=3, pad=1)
    brew.conv(model, "x", "c2", dim_in=4, dim_out=8, kernel=[3, 5], group=2,
              no_bias=True)
    nhwc = model_helper.ModelHelper(name="brew_conv_nhwc", arg_scope={"order": "NHWC"})
    brew.conv(nhwc, "x", "c3", dim_in=4, dim_out=8, kernel=3)
    ops = init_ops(model)
    assert args_of(ops["c1_w"])["shape"] == [8, 4, 3, 3] and ops["c1_w"].type == "XavierFill"
    assert args_of(ops["c1_b"])["shape"] == [8]
    assert args_of(ops["c2_w"])["shape"] == [8, 2, 3, 5] and "c2_b" not in ops
    assert args_of(init_ops(nhwc)["c3_w"])["shape"] == [8, 3, 3, 4]
    conv1, conv2 = model.net.Proto().op
    assert list(conv1.input) == ["x", "c1_w", "c1_b"]
    a1 = args_of(conv1)
    assert a1["kernel"] == 3 and a1["pad"] == 1 and a1["order"] == "NCHW"
    # use_cudnn comes from the model's arg_scope, as in Caffe2.
    assert conv1.engine == "CUDNN" and a1["exhaustive_search"] == 0
    assert list(conv2.input) == ["x", "c2_w"]
    a2 = args_of(conv2)
    assert a2["kernel_h"] == 3 and a2["kernel_w"] == 5 and a2["group"] == 2
    assert "no_bias" not in a2
    assert args_of(nhwc.net.Proto().op[0])["order"] == "NHWC"
    with pytest.raises(ValueError):
        brew.conv(model, "x", "c4", 4, 8, kernel=[1, 2, 3])


def test_spatial_bn_params_and_outputs():
    model = model_helper.ModelHelper(name="brew_bn")
    out = brew.spatial_bn(model, "x", "bn", 6, epsilon=1e-3, momentum=0.8, init_scale=2.0)
    assert str(out) == "bn"
    assert names(model.params) == ["bn_s", "bn_b"]
    assert names(model.GetComputedParams()) == ["bn_rm", "bn_riv"]
    ops = init_ops(model)
    for blob, value in [("bn_s", 2.0), ("bn_b", 0.0), ("bn_rm", 0.0), ("bn_riv", 1.0)]:
        assert ops[blob].type == "ConstantFill"
        assert args_of(ops[blob])["shape"] == [6] and args_of(ops[blob])["value"] == value
    op = model.net.Proto().op[0]
    assert op.type == "SpatialBN"
    assert list(op.input) == ["x", "bn_s", "bn_b", "bn_rm", "bn_riv"]
    assert list(op.output) == ["bn", "bn_rm", "bn_riv", "bn_sm", "bn_siv"]
    assert args_of(op)["epsilon"] == pytest.approx(1e-3) and args_of(op)["order"] == "NCHW"

    test_model = model_helper.ModelHelper(name="brew_bn_test", init_params=False)
    brew.spatial_bn(test_model, "x", "bn", 6, is_test=True)
    op = test_model.net.Proto().op[0]
    assert list(op.output) == ["bn"] and args_of(op)["is_test"] == 1


def test_parameterless_helpers():
    model = model_helper.ModelHelper(name="brew_misc")
    brew.max_pool(model, "x", "mp", kernel=2, stride=2)
    brew.average_pool(model, "x", "ap", kernel=3, stride=1, pad=1)
    brew.relu(model, "x", "r")
    brew.softmax(model, "x", "sm")
    brew.dropout(model, "x", "d", ratio=0.3, is_test=False)
    brew.sum(model, ["a", "b"], "s")
    brew.concat(model, ["a", "b"], "cat", axis=1)
    ops = model.net.Proto().op
    assert [op.type for op in ops] == ["MaxPool", "AveragePool", "Relu", "Softmax",
                                       "Dropout", "Sum", "Concat"]
    mp, ap, relu, sm, drop, add, cat = ops
    assert args_of(mp)["kernel"] == 2 and args_of(mp)["order"] == "NCHW"
    assert args_of(ap)["pad"] == 1
    assert relu.engine == "CUDNN"  # from the model's use_cudnn; CPU falls back
    assert list(drop.output) == ["d", "_d_mask"] and args_of(drop)["is_test"] == 0
    assert drop.engine == "CUDNN" and args_of(drop)["ratio"] == pytest.approx(0.3)
    assert list(add.input) == ["a", "b"] and list(add.output) == ["s"]
    assert list(cat.output) == ["cat", "_cat_concat_dims"]
    # An explicit axis drops the scope's order, which Concat would refuse with it.
    assert args_of(cat)["axis"] == 1 and "order" not in args_of(cat)
    assert model.params == []
    with pytest.raises(ValueError, match="is_test"):
        brew.dropout(model, "x", "d2")


def test_arg_scope_and_registry():
    model = model_helper.ModelHelper(name="brew_scope")
    with brew.arg_scope([brew.fc], axis=2):
        brew.fc(model, "x", "f1", 2, 3)
        brew.fc(model, "x", "f2", 2, 3, axis=1)  # explicit keywords win
    brew.fc(model, "x", "f3", 2, 3)
    f1, f2, f3 = model.net.Proto().op
    assert args_of(f1)["axis"] == 2 and args_of(f2)["axis"] == 1 and "axis" not in args_of(f3)
    assert brew.has_helper("fc") and brew.has_helper(brew.conv) and not brew.has_helper("nope")

    def double(model, blob_in, blob_out, **kwargs):
        return model.net.Scale(blob_in, blob_out, scale=2.0)
    brew.Register(double)
    brew.double(model, "x", "x2")
    assert model.net.Proto().op[-1].type == "Scale"
    with pytest.raises(AttributeError):
        brew.Register(double)
    with pytest.raises(RuntimeError, match="model"):
        brew.relu("x", "y")


def conv2d_nchw(x, w, b, pad):
    n, c, hgt, wid = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out_h, out_w = hgt + 2 * pad - k + 1, wid + 2 * pad - k + 1
    y = np.zeros((n, w.shape[0], out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            patch = xp[:, :, i:i + k, j:j + k]
            y[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return y + b[None, :, None, None]


def test_tiny_cnn_forward_matches_numpy():
    rng = np.random.RandomState(0)
    n, c_in, c_out, size, classes = 2, 3, 4, 6, 5
    model = model_helper.ModelHelper(name="brew_cnn")
    conv = brew.conv(model, "data", "conv1", c_in, c_out, kernel=3, pad=1)
    bn = brew.spatial_bn(model, conv, "bn1", c_out, epsilon=1e-5, momentum=0.9)
    relu = brew.relu(model, bn, "relu1")
    pool = brew.max_pool(model, relu, "pool1", kernel=2, stride=2)
    pred = brew.fc(model, pool, "pred", c_out * (size // 2) ** 2, classes)
    assert names(model.params) == ["conv1_w", "conv1_b", "bn1_s", "bn1_b", "pred_w", "pred_b"]
    assert str(pred) == "pred"

    workspace.RunNetOnce(model.param_init_net)
    x = rng.randn(n, c_in, size, size).astype(np.float32)
    workspace.FeedBlob("data", x)
    # A non-zero conv bias makes the bias's placement observable.
    conv_b = rng.randn(c_out).astype(np.float32)
    workspace.FeedBlob("conv1_b", conv_b)
    workspace.RunNetOnce(model.net)

    w = workspace.FetchBlob("conv1_w").astype(np.float64)
    ref_conv = conv2d_nchw(x.astype(np.float64), w, conv_b.astype(np.float64), pad=1)
    np.testing.assert_allclose(workspace.FetchBlob("conv1"), ref_conv, rtol=1e-4, atol=1e-5)
    mean = ref_conv.mean(axis=(0, 2, 3))
    var = ref_conv.var(axis=(0, 2, 3))
    ref_bn = (ref_conv - mean[None, :, None, None]) / np.sqrt(var + 1e-5)[None, :, None, None]
    np.testing.assert_allclose(workspace.FetchBlob("bn1"), ref_bn, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(workspace.FetchBlob("bn1_rm"), 0.1 * mean, rtol=1e-4, atol=1e-6)
    ref_relu = np.maximum(ref_bn, 0)
    np.testing.assert_allclose(workspace.FetchBlob("relu1"), ref_relu, rtol=1e-3, atol=1e-4)
    ref_pool = ref_relu.reshape(n, c_out, size // 2, 2, size // 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(workspace.FetchBlob("pool1"), ref_pool, rtol=1e-3, atol=1e-4)
    ref_pred = ref_pool.reshape(n, -1) @ workspace.FetchBlob("pred_w").T.astype(np.float64)
    np.testing.assert_allclose(workspace.FetchBlob("pred"), ref_pred, rtol=1e-3, atol=1e-4)

    # The backward pass reaches every trained parameter but not the statistics.
    prob = brew.softmax(model, pred, "prob")
    xent = model.net.LabelCrossEntropy([prob, "label"], "xent")
    loss = model.net.AveragedLoss(xent, "loss")
    workspace.FeedBlob("label", np.array([1, 3], dtype=np.int32))
    model.AddGradientOperators([loss])
    assert set(names(model.param_to_grad)) == set(names(model.params))
    workspace.RunNetOnce(model.net)
    for param, grad in model.param_to_grad.items():
        assert workspace.FetchBlob(grad).shape == workspace.FetchBlob(param).shape


def test_fc_with_wrong_dim_in_names_the_op():
    model = model_helper.ModelHelper(name="brew_bad")
    brew.fc(model, "x", "fc_bad", dim_in=7, dim_out=3)
    workspace.RunNetOnce(model.param_init_net)
    workspace.FeedBlob("x", np.ones((2, 5), np.float32))
    with pytest.raises(RuntimeError, match="FC"):
        workspace.RunNetOnce(model.net)


def test_more_caffe2_helpers_against_numpy():
    model = model_helper.ModelHelper(name="more_helpers")
    x = np.random.RandomState(3).randn(2, 3, 4, 4).astype(np.float32)
    workspace.FeedBlob("x", x)
    brew.tanh(model, "x", "t")
    brew.transpose(model, "x", "xt", axes=[0, 2, 3, 1])
    brew.prelu(model, "x", "p", num_channels=3)
    brew.instance_norm(model, "x", "inorm", 3, epsilon=1e-5)
    brew.lrn(model, "x", "l", size=3, alpha=1e-4, beta=0.75, bias=1.0)
    brew.iter(model, "counter")
    a = np.random.RandomState(4).randn(2, 3, 5).astype(np.float32)
    b = np.random.RandomState(5).randn(2, 5, 4).astype(np.float32)
    workspace.FeedBlob("a", a)
    workspace.FeedBlob("b", b)
    brew.batch_mat_mul(model, ["a", "b"], "ab")
    assert [str(p) for p in model.params] == ["p_slope", "inorm_s", "inorm_b"]
    workspace.RunNetOnce(model.param_init_net)
    workspace.CreateNet(model.net)
    workspace.RunNet(model.net.Name(), 2)
    np.testing.assert_allclose(workspace.FetchBlob("t"), np.tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(workspace.FetchBlob("xt"), x.transpose(0, 2, 3, 1))
    np.testing.assert_allclose(workspace.FetchBlob("p"), np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    mean = x.mean(axis=(2, 3), keepdims=True)
    std = np.sqrt(x.var(axis=(2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(workspace.FetchBlob("inorm"), (x - mean) / std, rtol=1e-4,
                               atol=1e-5)
    padded = np.pad(x ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]
    np.testing.assert_allclose(workspace.FetchBlob("l"),
                               x / (1.0 + 1e-4 / 3 * window) ** 0.75, rtol=1e-5)
    assert workspace.FetchBlob("_l_scale").shape == x.shape
    np.testing.assert_allclose(workspace.FetchBlob("ab"), a @ b, rtol=1e-5, atol=1e-6)
    assert workspace.FetchBlob("counter").tolist() == [2]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
