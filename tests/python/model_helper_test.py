"""doppio.model_helper: the parameter bookkeeping (params, computed params,
name scopes, param_to_grad) and one training step of a small MLP built with
ModelHelper and brew, checked against gradients written out in numpy."""
import sys

import numpy as np
import pytest

from doppio import brew, core, model_helper, scope, workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def names(blobs):
    return [str(b) for b in blobs]


def test_nets_and_default_arg_scope():
    model = model_helper.ModelHelper(name="mh_nets")
    assert isinstance(model.net, core.Net) and isinstance(model.param_init_net, core.Net)
    assert model.net.Name() == "mh_nets"
    assert model.param_init_net.Name() == "mh_nets_init"
    assert model.arg_scope == {"order": "NCHW", "use_cudnn": True,
                               "cudnn_exhaustive_search": False}
    assert model.params == [] and model.GetComputedParams() == []
    scoped = model_helper.ModelHelper(name="mh_nets2", arg_scope={"order": "NHWC"})
    assert scoped.arg_scope["order"] == "NHWC" and scoped.arg_scope["use_cudnn"] is True
    assert model.Proto() is model.net.Proto()
    assert model.InitProto() is model.param_init_net.Proto()


def test_create_param_records_and_scopes():
    model = model_helper.ModelHelper(name="mh_create")
    init = model_helper.Initializer("ConstantFill", value=2.5)
    with core.NameScope("block"):
        w = model.create_param("w", shape=[2, 3], initializer=init,
                               tags=model_helper.ParameterTags.WEIGHT)
        stat = model.create_param("stat", shape=[3], initializer=init,
                                  tags=model_helper.ParameterTags.COMPUTED_PARAM)
    assert str(w) == "block/w" and str(stat) == "block/stat"
    assert names(model.params) == ["block/w"]
    assert names(model.GetComputedParams()) == ["block/stat"]
    assert names(model.GetAllParams()) == ["block/w", "block/stat"]
    with core.NameScope("elsewhere"):
        assert names(model.GetParams()) == []
        assert names(model.GetParams("")) == ["block/w"]  # '' means every scope
        assert names(model.GetParams("block")) == ["block/w"]
    assert names(model.GetWeights()) == ["block/w"]
    ops = model.param_init_net.Proto().op
    assert [op.type for op in ops] == ["ConstantFill", "ConstantFill"]
    assert list(ops[0].output) == ["block/w"]
    # Asking again for the same parameter gives the same blob and no new op.
    with core.NameScope("block"):
        again = model.create_param("w", shape=[2, 3], initializer=init)
        with pytest.raises(ValueError, match="block/w"):
            model.create_param("w", shape=[4], initializer=init)
    assert str(again) == "block/w" and len(model.param_init_net.Proto().op) == 2
    workspace.RunNetOnce(model.param_init_net)
    np.testing.assert_array_equal(workspace.FetchBlob("block/w"), np.full((2, 3), 2.5))
    with pytest.raises(TypeError):
        model.create_param(7, shape=[1], initializer=init)


def test_get_params_filters_by_namescope():
    model = model_helper.ModelHelper(name="mh_scopes")
    with core.NameScope("gpu_0"):
        brew.fc(model, "x", "fc", 3, 2)
    with core.NameScope("gpu_1"):
        brew.fc(model, "x", "fc", 3, 2)
    brew.fc(model, "x", "top", 3, 2)
    assert names(model.GetParams()) == ["gpu_0/fc_w", "gpu_0/fc_b", "gpu_1/fc_w",
                                        "gpu_1/fc_b", "top_w", "top_b"]
    assert names(model.GetParams("gpu_1")) == ["gpu_1/fc_w", "gpu_1/fc_b"]
    assert names(model.GetParams("gpu_0/")) == ["gpu_0/fc_w", "gpu_0/fc_b"]
    with core.NameScope("gpu_0"):
        assert names(model.GetParams()) == ["gpu_0/fc_w", "gpu_0/fc_b"]
    assert names(model.GetBiases("gpu_1")) == ["gpu_1/fc_b"]


def test_init_params_false_adds_no_init_ops():
    model = model_helper.ModelHelper(name="mh_noinit", init_params=False)
    brew.fc(model, "x", "fc", 3, 2)
    brew.spatial_bn(model, "x", "bn", 3)
    assert len(model.param_init_net.Proto().op) == 0
    assert names(model.params) == ["fc_w", "fc_b", "bn_s", "bn_b"]
    assert names(model.GetComputedParams()) == ["bn_rm", "bn_riv"]


def test_getattr_forwards_operators_to_net():
    model = model_helper.ModelHelper(name="mh_getattr")
    out = model.Relu("x", "y")
    assert str(out) == "y" and model.net.Proto().op[0].type == "Relu"
    with pytest.raises(AttributeError, match="NoSuchOp"):
        model.NoSuchOp("x", "y")


def softmax_rows(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def build_mlp(name, dim_in, hidden, classes):
    model = model_helper.ModelHelper(name=name)
    fc1 = brew.fc(model, "data", "fc1", dim_in=dim_in, dim_out=hidden)
    relu = brew.relu(model, fc1, "relu1")
    fc2 = brew.fc(model, relu, "fc2", dim_in=hidden, dim_out=classes)
    pred = brew.softmax(model, fc2, "pred")
    xent = model.net.LabelCrossEntropy([pred, "label"], "xent")
    loss = model.net.AveragedLoss(xent, "loss")
    return model, loss


def test_mlp_forward_gradients_and_sgd_step_match_numpy():
    rng = np.random.RandomState(3)
    n, d, h, c = 6, 5, 7, 4
    x = rng.randn(n, d).astype(np.float32)
    label = rng.randint(0, c, size=n).astype(np.int32)
    model, loss = build_mlp("mh_mlp", d, h, c)
    assert names(model.params) == ["fc1_w", "fc1_b", "fc2_w", "fc2_b"]
    grad_map = model.AddGradientOperators([loss])
    assert set(names(model.param_to_grad)) == {"fc1_w", "fc1_b", "fc2_w", "fc2_b"}
    for param, grad in model.param_to_grad.items():
        assert str(grad_map[str(param)]) == str(grad)
        assert model.get_param_info(param).grad == grad
    assert [str(info) for info in model.GetOptimizationParamInfo()] == \
        ["fc1_w", "fc1_b", "fc2_w", "fc2_b"]
    with pytest.raises(RuntimeError, match="twice"):
        model.AddGradientOperators([loss])

    # Plain SGD on every parameter, as an optimizer would add it.
    lr = 0.5
    one = model.param_init_net.ConstantFill([], "ONE", shape=[1], value=1.0)
    neg_lr = model.param_init_net.ConstantFill([], "NEG_LR", shape=[1], value=-lr)
    for param, grad in model.param_to_grad.items():
        model.net.WeightedSum([param, one, grad, neg_lr], param)

    workspace.RunNetOnce(model.param_init_net)
    w1, b1 = workspace.FetchBlob("fc1_w"), workspace.FetchBlob("fc1_b")
    w2, b2 = workspace.FetchBlob("fc2_w"), workspace.FetchBlob("fc2_b")
    # XavierFill: uniform in +-sqrt(3 / fan_in); ConstantFill: zeros.
    assert w1.shape == (h, d) and w2.shape == (c, h)
    assert np.abs(w1).max() <= np.sqrt(3.0 / d) + 1e-6 and np.abs(w1).std() > 0
    assert np.abs(w2).max() <= np.sqrt(3.0 / h) + 1e-6
    np.testing.assert_array_equal(b1, np.zeros(h))
    np.testing.assert_array_equal(b2, np.zeros(c))

    workspace.FeedBlob("data", x)
    workspace.FeedBlob("label", label)
    workspace.RunNetOnce(model.net)

    # Reference forward and backward in numpy.
    a1 = x.astype(np.float64) @ w1.T + b1
    r1 = np.maximum(a1, 0)
    z = r1 @ w2.T + b2
    p = softmax_rows(z)
    ref_loss = -np.log(p[np.arange(n), label]).mean()
    dz = p.copy()
    dz[np.arange(n), label] -= 1
    dz /= n
    g_w2, g_b2 = dz.T @ r1, dz.sum(axis=0)
    da1 = (dz @ w2) * (a1 > 0)
    g_w1, g_b1 = da1.T @ x, da1.sum(axis=0)

    np.testing.assert_allclose(workspace.FetchBlob("pred"), p, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(workspace.FetchBlob("loss"), ref_loss, rtol=1e-4)
    expected = {"fc1_w": g_w1, "fc1_b": g_b1, "fc2_w": g_w2, "fc2_b": g_b2}
    for param, grad in model.param_to_grad.items():
        np.testing.assert_allclose(workspace.FetchBlob(grad), expected[str(param)],
                                   rtol=1e-4, atol=1e-5, err_msg=str(param))
    updated = {"fc1_w": w1 - lr * g_w1, "fc1_b": b1 - lr * g_b1,
               "fc2_w": w2 - lr * g_w2, "fc2_b": b2 - lr * g_b2}
    for param, value in updated.items():
        np.testing.assert_allclose(workspace.FetchBlob(param), value,
                                   rtol=1e-4, atol=1e-5, err_msg=param)


def test_duplicate_params_refused_by_add_gradient_operators():
    model, loss = build_mlp("mh_dupes", 3, 4, 2)
    model.AddParameter(model.params[0])
    with pytest.raises(RuntimeError, match="fc1_w"):
        model.AddGradientOperators([loss])


def test_get_param_to_grad_before_gradients_is_an_error():
    model, _ = build_mlp("mh_early", 3, 4, 2)
    with pytest.raises(RuntimeError, match="AddGradientOperators"):
        model.get_param_to_grad(model.params)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
