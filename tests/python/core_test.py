"""doppio.core: BlobReference, CreateOperator's argument encoding, Net's op
sugar and transforms, and the backward pass, checked against protos built
by hand and gradients computed with numpy."""
import sys

import numpy as np
import pytest

from doppio import core, workspace
from doppio.proto import caffe2_pb2, doppio_pb2


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def arg_of(op, name):
    matches = [a for a in op.arg if a.name == name]
    assert len(matches) == 1, "argument {} appears {} times".format(name, len(matches))
    return matches[0]


# ---------------------------------------------------------------- protos


def test_caffe2_pb2_alias_is_doppio_pb2():
    assert caffe2_pb2.OperatorDef is doppio_pb2.OperatorDef
    assert caffe2_pb2.NetDef is doppio_pb2.NetDef
    assert caffe2_pb2.CPU == 0 and caffe2_pb2.CUDA == 1
    assert caffe2_pb2.TensorProto.FLOAT == doppio_pb2.TensorProto.FLOAT


def test_device_option():
    option = core.DeviceOption(caffe2_pb2.CUDA, 3, random_seed=11, node_name="n1")
    assert isinstance(option, doppio_pb2.DeviceOption)
    assert (option.device_type, option.cuda_gpu_id, option.random_seed, option.node_name) == \
        (1, 3, 11, "n1")
    cpu = core.DeviceOption(caffe2_pb2.CPU)
    assert cpu.device_type == 0 and cpu.cuda_gpu_id == 0 and not cpu.HasField("random_seed")
    assert core.DeviceOption(caffe2_pb2.CUDA, cuda_gpu_id=2).cuda_gpu_id == 2
    assert core.device_option_equal(core.DeviceOption(1, 2), core.DeviceOption(1, 2, 5))
    assert not core.device_option_equal(core.DeviceOption(1, 2), core.DeviceOption(1, 3))


# ---------------------------------------------------------------- blob references


def test_blob_reference_behaves_like_its_name():
    ref = core.BlobReference("gpu_0/fc_w")
    assert str(ref) == "gpu_0/fc_w" and ref == "gpu_0/fc_w" and ref != "fc_w"
    assert ref == core.BlobReference("gpu_0/fc_w")
    assert {ref: 1}["gpu_0/fc_w"] == 1 and {"gpu_0/fc_w": 2}[ref] == 2
    assert str(ref + "_grad") == "gpu_0/fc_w_grad"
    assert str("prefix_" + ref) == "prefix_gpu_0/fc_w"
    assert ref.GetNameScope() == "gpu_0/" and ref.GetUnscopedName() == "fc_w"
    assert core.BlobReference(b"bytes_name") == "bytes_name"
    with pytest.raises(RuntimeError):
        ref + 3


def test_blob_reference_op_sugar():
    net = core.Net("blob_sugar")
    x = net.AddExternalInput("x")
    y = x.Relu([], "y")
    z = y.Sum(["x"], "z")
    assert y.Net() is net and z == "z"
    ops = net.Proto().op
    assert [o.type for o in ops] == ["Relu", "Sum"]
    assert list(ops[0].input) == ["x"] and list(ops[1].input) == ["y", "x"]
    with pytest.raises(AttributeError, match="net source"):
        core.BlobReference("orphan").Relu([], "out")
    with pytest.raises(AttributeError, match="not a registered operator"):
        y.NotAnOperator([], "out")


def test_scoped_names():
    assert core.ScopedName("w") == "w"
    with core.NameScope("tower"):
        assert core.ScopedName("w") == "tower/w"
        ref = core.ScopedBlobReference("w")
        assert isinstance(ref, core.BlobReference) and ref == "tower/w"


# ---------------------------------------------------------------- CreateOperator


def test_create_operator_matches_a_hand_built_proto():
    device = core.DeviceOption(caffe2_pb2.CUDA, 1)
    extra = caffe2_pb2.Argument(name="given", i=9)
    op = core.CreateOperator("Conv", ["x", core.BlobReference("w")], "y", name="conv1",
                             control_input=["ctl"], device_option=device, arg=[extra],
                             engine="CUDNN", random_seed=5, kernel=3)
    expected = doppio_pb2.OperatorDef(
        type="Conv", name="conv1", input=["x", "w"], output=["y"], control_input=["ctl"],
        engine="CUDNN",
        device_option=doppio_pb2.DeviceOption(device_type=1, cuda_gpu_id=1, random_seed=5))
    expected.arg.add(name="given", i=9)
    expected.arg.add(name="kernel", i=3)
    assert op == expected


@pytest.mark.parametrize("value, field, expected", [
    (1.5, "f", 1.5),
    (7, "i", 7),
    (True, "i", 1),
    (np.float32(0.25), "f", 0.25),
    (np.int64(-3), "i", -3),
    ("NCHW", "s", b"NCHW"),
    (b"raw", "s", b"raw"),
    ([1.0, 2.5], "floats", [1.0, 2.5]),
    ([1, 2, 3], "ints", [1, 2, 3]),
    ([True, 4], "ints", [1, 4]),
    ((2, 2), "ints", [2, 2]),
    (np.array([[1.0, 2.0]], np.float32), "floats", [1.0, 2.0]),
    (np.array([5, 6], np.int64), "ints", [5, 6]),
    (np.array([0.5, 1.5]), "floats", [0.5, 1.5]),
    (["a", b"b"], "strings", [b"a", b"b"]),
])
def test_argument_encoding(value, field, expected):
    op = core.CreateOperator("Relu", "x", "y", value=value)
    arg = arg_of(op, "value")
    got = getattr(arg, field)
    got = list(got) if field in ("floats", "ints", "strings") else got
    assert got == expected
    # Exactly one field is set.
    set_fields = [f.name for f, _ in arg.ListFields() if f.name != "name"]
    assert set_fields == [field]


def test_argument_encoding_of_protos():
    inner = doppio_pb2.NetDef(name="inner")
    op = core.CreateOperator("Relu", "x", "y", net=inner, nets=[inner, inner],
                             shape=doppio_pb2.TensorShape(dims=[2]))
    assert arg_of(op, "net").n.name == "inner"
    assert len(arg_of(op, "nets").nets) == 2
    assert doppio_pb2.TensorShape.FromString(arg_of(op, "shape").s).dims == [2]


def test_argument_encoding_rejects_unknown_values():
    with pytest.raises(ValueError, match="Unknown argument type.*bad"):
        core.CreateOperator("Relu", "x", "y", bad=object())
    with pytest.raises(ValueError, match="Unknown iterable argument type"):
        core.CreateOperator("Relu", "x", "y", bad=[1, "a"])
    with pytest.raises(TypeError):
        core.CreateOperator("Relu", [3], "y")


def test_create_operator_uses_scopes_but_keeps_references():
    device = core.DeviceOption(caffe2_pb2.CUDA, 4)
    with core.NameScope("s"), core.DeviceScope(device):
        op = core.CreateOperator("Sum", ["a", core.BlobReference("b")], "c")
        explicit = core.CreateOperator("Relu", "a", "b", device_option=core.DeviceOption(0))
    assert list(op.input) == ["s/a", "b"] and list(op.output) == ["s/c"]
    assert op.device_option == device
    assert explicit.device_option.device_type == 0


# ---------------------------------------------------------------- Net


def test_op_sugar_builds_what_create_operator_builds():
    net = core.Net("sugar")
    out = net.FC(["x", "w", "b"], "y", axis=1, order="NCHW")
    assert isinstance(out, core.BlobReference) and out == "y" and out.Net() is net
    expected = core.CreateOperator("FC", ["x", "w", "b"], "y", axis=1, order="NCHW")
    assert net.Proto().op[0] == expected
    assert list(net.Proto().external_input) == ["x", "w", "b"]
    outs = net.Split("y", ["y0", "y1"], axis=0)
    assert isinstance(outs, tuple) and [str(o) for o in outs] == ["y0", "y1"]
    with pytest.raises(AttributeError, match="NoSuchOp is not a registered operator"):
        net.NoSuchOp("x", "y")


def test_automatic_output_names():
    net = core.Net("auto")
    first = net.Relu("x")
    second = net.Relu(first)
    parts = net.Split(second, 2)
    assert first == "auto/Relu" and second == "auto/Relu_2"
    assert [str(p) for p in parts] == ["auto/Split:0", "auto/Split:1"]
    assert net.NextName() == "auto_blob_0" and net.NextName() == "auto_blob_1"
    # NextBlob: the name itself while unused, then name_auto_<k> (Caffe2's).
    assert net.NextBlob("tmp") == "tmp" and net.NextBlob("tmp") == "tmp_auto_0"
    with core.NameScope("ns"):
        assert net.NextScopedBlob("tmp") == "ns/tmp"
    with core.NameScope("ns"):
        scoped = net.Relu("x")
    assert scoped == "ns/auto/Relu"


def test_net_names_are_unique_and_netdefs_are_copied():
    first, second = core.Net("same_name"), core.Net("same_name")
    assert first.Name() == "same_name" and second.Name() == "same_name_1"
    source = doppio_pb2.NetDef(name="from_proto")
    source.op.add(type="Relu", input=["x"], output=["from_proto_blob_4"])
    net = core.Net(source)
    assert net.Name() == "from_proto" and str(net) == "from_proto"
    assert net.NextName() == "from_proto_blob_5"
    net.Relu("x", "extra")
    assert len(source.op) == 1 and len(net.Proto().op) == 2
    with pytest.raises(TypeError):
        core.Net(3)


def test_proto_is_mutable_and_lookups_follow_it():
    net = core.Net("mutable")
    net.Proto().op.add(type="Relu", input=["p"], output=["q"])
    assert net.BlobIsDefined("q") and net.UsesBlob("p") and not net.UsesBlob("r")
    net.Proto().external_input.append("p")
    assert net.BlobIsDefined("p")


def test_external_inputs_and_outputs():
    net = core.Net("externals")
    x, w = net.AddExternalInput("x", "w")
    assert isinstance(x, core.BlobReference) and x.Net() is net
    with pytest.raises(ValueError, match="already contains an input named x"):
        net.AddExternalInput("x")
    y = net.MatMul([x, w], "y")
    net.AddExternalOutput(y)
    with pytest.raises(ValueError, match="no op writes it"):
        net.AddExternalOutput("never_made")
    assert net.external_inputs == ["x", "w"] and net.external_outputs == ["y"]
    assert all(isinstance(b, core.BlobReference) for b in net.external_inputs)


def test_clone_remaps_masks_and_leaves_the_original():
    net = core.Net("orig")
    net.Relu("x", "h")
    net.Scale("h", "y", scale=2.0)
    net.AddExternalOutput("y")
    clone = net.Clone("copy", blob_remap={"x": "x2", "y": "y2"})
    assert clone.Name() == "copy"
    assert [list(o.input) for o in clone.Proto().op] == [["x2"], ["h"]]
    assert list(clone.Proto().external_input) == ["x2"]
    assert list(clone.Proto().external_output) == ["y2"]
    assert list(net.Proto().op[0].input) == ["x"]
    assert arg_of(clone.Proto().op[1], "scale").f == 2.0
    tail = net.Clone("tail", op_id_mask=[1], update_external_list=True)
    assert [o.type for o in tail.Proto().op] == ["Scale"]
    assert list(tail.Proto().external_input) == ["h"]
    assert list(tail.Proto().external_output) == ["y"]


def test_append_net():
    first = core.Net("part1")
    first.Relu("x", "h")
    second = core.Net("part2")
    second.Scale("h", "y", scale=3.0)
    second.AddExternalOutput("y")
    device = core.DeviceOption(caffe2_pb2.CPU, random_seed=1)
    assert first.AppendNet(second, device_option=device) is first
    assert [o.type for o in first.Proto().op] == ["Relu", "Scale"]
    # h is made inside the joined net, so only x stays external.
    assert list(first.Proto().external_input) == ["x"]
    assert list(first.Proto().external_output) == ["y"]
    assert first.Proto().op[1].device_option.random_seed == 1
    assert not second.Proto().op[0].HasField("device_option")
    x = np.array([-2.0, 1.0, 3.0], np.float32)
    workspace.FeedBlob("x", x)
    workspace.RunNetOnce(first)
    np.testing.assert_allclose(workspace.FetchBlob("y"), 3 * np.maximum(x, 0))


def test_const_and_constant_fill():
    net = core.Net("consts")
    floats = net.Const(np.array([[1.5, -2.0]], np.float32), "cf")
    ints = net.Const(np.array([3, 4], np.int32))
    flag = net.Const(True, "flag")
    filled = net.ConstantFill([], "filled", shape=[2, 2], value=7.0)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(floats), [[1.5, -2.0]])
    assert workspace.FetchBlob(ints).dtype == np.int32
    np.testing.assert_array_equal(workspace.FetchBlob(ints), [3, 4])
    assert workspace.FetchBlob(flag).dtype == np.bool_ and workspace.FetchBlob(flag).all()
    np.testing.assert_array_equal(workspace.FetchBlob(filled), np.full((2, 2), 7.0))


def test_sugar_net_runs_like_numpy():
    rng = np.random.RandomState(1)
    x = rng.randn(4, 3).astype(np.float32)
    w = rng.randn(5, 3).astype(np.float32)
    b = rng.randn(5).astype(np.float32)
    for name, value in (("x", x), ("w", w), ("b", b)):
        workspace.FeedBlob(name, value)
    net = core.Net("fc_relu")
    out = net.FC(["x", "w", "b"]).Relu([])
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob(out), np.maximum(x @ w.T + b, 0),
                               rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- backward pass

needs_backward = pytest.mark.skipif(
    not hasattr(workspace.C, "add_gradient_operators"),
    reason="doppio._C has no add_gradient_operators in this build")


def fc_relu_scale_net(name):
    """loss = mean(0.5 * relu(x w^T + b)); returns the net and the numpy
    gradients of the loss with respect to w, b and x."""
    rng = np.random.RandomState(7)
    x = rng.randn(6, 4).astype(np.float32)
    w = rng.randn(3, 4).astype(np.float32)
    b = rng.randn(3).astype(np.float32)
    for blob, value in (("x", x), ("w", w), ("b", b)):
        workspace.FeedBlob(blob, value)
    net = core.Net(name)
    y = net.FC(["x", "w", "b"], "y")
    r = net.Relu(y, "r")
    s = net.Scale(r, "s", scale=0.5)
    net.AveragedLoss(s, "loss")
    pre = x @ w.T + b
    d_pre = 0.5 / pre.size * (pre > 0)
    return net, {"w": d_pre.T @ x, "b": d_pre.sum(axis=0), "x": d_pre @ w}


@needs_backward
def test_add_gradient_operators_matches_numpy():
    net, expected = fc_relu_scale_net("backward")
    forward_ops = len(net.Proto().op)
    grad_map = net.AddGradientOperators(["loss"])
    assert len(net.Proto().op) > forward_ops
    for blob in ("w", "b", "x"):
        assert blob in grad_map and isinstance(grad_map[blob], core.BlobReference)
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("loss_autogen_grad"), 1.0)
    for blob, value in expected.items():
        np.testing.assert_allclose(workspace.FetchBlob(grad_map[blob]), value,
                                   rtol=1e-4, atol=1e-6, err_msg=blob)


@needs_backward
def test_add_gradient_operators_with_given_loss_gradient_and_skip():
    net, expected = fc_relu_scale_net("backward_given")
    workspace.FeedBlob("loss_scale", np.array(2.0, np.float32))
    # A leading op that needs no gradient is skipped.
    with_fill = core.Net("with_fill")
    with_fill.ConstantFill([], "unused", shape=[1], value=0.0)
    with_fill.AppendNet(net)
    grad_map = with_fill.AddGradientOperators({"loss": "loss_scale"}, skip=1)
    workspace.RunNetOnce(with_fill)
    np.testing.assert_allclose(workspace.FetchBlob(grad_map["w"]), 2 * expected["w"],
                               rtol=1e-4, atol=1e-6)
    assert "unused" not in grad_map


@needs_backward
def test_sparse_gradient_is_a_gradient_slice():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([2, 0, 2], np.int32)
    workspace.FeedBlob("table", table)
    workspace.FeedBlob("indices", indices)
    net = core.Net("sparse")
    rows = net.Gather(["table", "indices"], "rows")
    net.AveragedLoss(rows, "loss")
    grad_map = net.AddGradientOperators(["loss"])
    slice_ = grad_map["table"]
    assert isinstance(slice_, core.GradientSlice)
    workspace.RunNetOnce(net)
    np.testing.assert_array_equal(workspace.FetchBlob(slice_.indices), indices)
    np.testing.assert_allclose(workspace.FetchBlob(slice_.values),
                               np.full((3, 3), 1.0 / 9), rtol=1e-6)


@needs_backward
def test_backward_pass_errors_are_clear_and_leave_the_net_alone():
    net = core.Net("no_loss_here")
    net.Relu("x", "y")
    with pytest.raises(RuntimeError, match="no_loss_here.*'missing_loss'"):
        net.AddGradientOperators(["missing_loss"])
    assert [o.type for o in net.Proto().op] == ["Relu"]


def test_gradient_for_one_op():
    op = core.CreateOperator("Relu", "x", "y")
    grad_ops, input_grads = core.GradientRegistry.GetGradientForOp(op, ["y_grad"])
    assert [g.type for g in grad_ops] == ["ReluGradient"]
    assert input_grads == ["x_grad"]
    assert "y_grad" in grad_ops[0].input and list(grad_ops[0].output) == ["x_grad"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
