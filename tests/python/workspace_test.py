"""doppio.workspace: blobs round-trip through numpy in every dtype, nets and
operators run, workspaces switch, and bad input raises clear Python
exceptions while the interpreter lives on."""
import os
import sys

import numpy as np
import pytest

from doppio import _C, core, scope, workspace
from doppio.proto import doppio_pb2

NUMERIC_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32,
                  np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]
SHAPES = [(), (0,), (2, 0, 3), (5,), (2, 3, 4)]


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.SwitchWorkspace("default", True)
    workspace.ResetWorkspace()
    yield
    workspace.SwitchWorkspace("default", True)
    workspace.ResetWorkspace()


def random_array(dtype, shape, seed=0):
    rng = np.random.RandomState(seed)
    if dtype == np.bool_:
        values = rng.random_sample(size=shape) > 0.5
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        low, high = max(info.min, -2**62), min(info.max, 2**62)
        values = rng.randint(low, high, size=shape, dtype=np.int64)
    else:
        values = rng.standard_normal(size=shape) * 100
    return np.asarray(values).astype(dtype)


# ---------------------------------------------------------------- feeding


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_numeric_round_trip(dtype, shape):
    array = random_array(dtype, shape)
    assert workspace.FeedBlob("blob", array) is True
    fetched = workspace.FetchBlob("blob")
    assert fetched.dtype == np.dtype(dtype)
    assert fetched.shape == shape
    np.testing.assert_array_equal(fetched, array)


def test_fetch_returns_a_copy():
    array = np.arange(6, dtype=np.float32)
    workspace.FeedBlob("x", array)
    fetched = workspace.FetchBlob("x")
    fetched[0] = 100
    array[1] = 100
    np.testing.assert_array_equal(workspace.FetchBlob("x"), np.arange(6, dtype=np.float32))


@pytest.mark.parametrize("array", [
    np.array(["a", "bc", ""]),                   # numpy unicode
    np.array([b"x\x00y", b"zz"]),                # numpy bytes, embedded NUL
    np.array(["mixed", b"types"], dtype=object),
    np.array([["r0c0", "r0c1"], ["r1c0", "r1c1"]]),
    np.array("zero-d"),
    np.array([], dtype=object),
    np.array(["\u00e9t\u00e9"]),                  # non-ASCII text is UTF-8
])
def test_string_round_trip(array):
    workspace.FeedBlob("s", array)
    fetched = workspace.FetchBlob("s")
    assert fetched.dtype == object
    assert fetched.shape == array.shape
    expected = [v if isinstance(v, bytes) else str(v).encode("utf-8")
                for v in array.reshape(-1).tolist()]
    assert fetched.reshape(-1).tolist() == expected


def test_python_values_convert_like_numpy():
    workspace.FeedBlob("f", 2.5)
    workspace.FeedBlob("i", 7)
    workspace.FeedBlob("l", [[1.0, 2.0], [3.0, 4.0]])
    workspace.FeedBlob("t", "hello")
    assert workspace.FetchBlob("f").dtype == np.float64 and workspace.FetchBlob("f") == 2.5
    assert workspace.FetchBlob("i").dtype == np.int64 and workspace.FetchBlob("i") == 7
    np.testing.assert_array_equal(workspace.FetchBlob("l"), [[1, 2], [3, 4]])
    # A lone string is Caffe2's string blob, fetched as bytes.
    assert workspace.FetchBlob("t") == b"hello"


def test_feed_tensor_proto():
    proto = doppio_pb2.TensorProto(dims=[2, 2], data_type=doppio_pb2.TensorProto.INT32,
                                   int32_data=[1, -2, 3, -4])
    workspace.FeedBlob("p", proto)
    fetched = workspace.FetchBlob("p")
    assert fetched.dtype == np.int32
    np.testing.assert_array_equal(fetched, [[1, -2], [3, -4]])


def test_blob_reference_names_and_device_options():
    ref = core.BlobReference("by_ref")
    workspace.FeedBlob(ref, np.ones(2, np.float32))
    assert workspace.HasBlob("by_ref") and workspace.HasBlob(ref)
    np.testing.assert_array_equal(workspace.FetchBlob(ref), [1, 1])
    cpu = core.DeviceOption(doppio_pb2.CPU)
    workspace.FeedBlob("on_cpu", np.zeros(3), device_option=cpu)
    with scope.DeviceScope(cpu):
        workspace.FeedBlob("scoped_cpu", np.zeros(3))
    assert workspace.HasBlob("on_cpu") and workspace.HasBlob("scoped_cpu")


@pytest.mark.skipif(workspace.NumCudaDevices() > 0, reason="needs a machine without CUDA")
def test_feed_to_cuda_without_devices_is_refused():
    with pytest.raises(RuntimeError, match="CUDA"):
        workspace.FeedBlob("g", np.zeros(2, np.float32),
                           device_option=core.DeviceOption(doppio_pb2.CUDA, 0))
    assert not workspace.HasBlob("g")


def test_blobs_has_blob_fetch_blobs_and_reset():
    workspace.FeedBlob("a", np.array([1.0], np.float32))
    workspace.FeedBlob("b", np.array([2], np.int32))
    assert sorted(workspace.Blobs()) == ["a", "b"]
    assert workspace.HasBlob("a") and not workspace.HasBlob("c")
    a, b = workspace.FetchBlobs(["a", "b"])
    assert a.tolist() == [1.0] and b.tolist() == [2]
    assert workspace.ResetWorkspace() is True
    assert workspace.Blobs() == []


# ---------------------------------------------------------------- workspaces


def test_switch_workspace():
    workspace.FeedBlob("in_default", np.ones(1))
    with pytest.raises(RuntimeError, match="no_such_ws"):
        workspace.SwitchWorkspace("no_such_ws")
    assert workspace.CurrentWorkspace() == "default"
    workspace.SwitchWorkspace("second", create_if_missing=True)
    assert workspace.CurrentWorkspace() == "second"
    assert not workspace.HasBlob("in_default")
    workspace.FeedBlob("in_second", np.ones(1))
    assert {"default", "second"} <= set(workspace.Workspaces())
    workspace.SwitchWorkspace("default")
    assert workspace.HasBlob("in_default") and not workspace.HasBlob("in_second")
    workspace.SwitchWorkspace("second")
    assert workspace.HasBlob("in_second")


# ---------------------------------------------------------------- running


def relu_op(x="x", y="y"):
    return doppio_pb2.OperatorDef(type="Relu", input=[x], output=[y])


def test_run_operator_once_and_operators_once():
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    workspace.FeedBlob("x", x)
    assert workspace.RunOperatorOnce(relu_op()) is True
    np.testing.assert_array_equal(workspace.FetchBlob("y"), np.maximum(x, 0))
    scale = doppio_pb2.OperatorDef(type="Scale", input=["y"], output=["z"])
    scale.arg.add(name="scale", f=3.0)
    assert workspace.RunOperatorsOnce([relu_op(), scale]) is True
    np.testing.assert_allclose(workspace.FetchBlob("z"), 3 * np.maximum(x, 0))


def test_run_net_once_takes_net_or_netdef():
    x = np.array([[-1.0, 4.0]], np.float32)
    workspace.FeedBlob("x", x)
    netdef = doppio_pb2.NetDef(name="once", op=[relu_op()])
    assert workspace.RunNetOnce(netdef) is True
    np.testing.assert_array_equal(workspace.FetchBlob("y"), [[0, 4]])
    net = core.Net("once_net")
    net.Scale("x", "x3", scale=3.0)
    workspace.RunNetOnce(net)
    np.testing.assert_allclose(workspace.FetchBlob("x3"), 3 * x)
    # Running once does not leave a net behind.
    assert net.Name() not in workspace.Nets()


def test_create_net_and_run_net_by_name_or_net():
    workspace.FeedBlob("acc", np.zeros(3, np.float32))
    workspace.FeedBlob("one", np.ones(3, np.float32))
    net = core.Net("accumulate")
    net.Sum(["acc", "one"], "acc")
    assert workspace.CreateNet(net) is True
    assert net.Name() in workspace.Nets()
    assert workspace.RunNet(net.Name()) is True
    workspace.RunNet(net, num_iter=4)
    workspace.RunNet(net.Proto(), 2)
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [7, 7, 7])
    workspace.RunNet(net, num_iter=0)
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [7, 7, 7])
    # Re-creating needs overwrite.
    workspace.CreateNet(net, overwrite=True)
    workspace.RunNet(net)
    np.testing.assert_array_equal(workspace.FetchBlob("acc"), [8, 8, 8])


def test_capabilities_and_global_init():
    assert workspace.C is _C
    assert isinstance(workspace.NumCudaDevices(), int) and workspace.NumCudaDevices() >= 0
    assert isinstance(workspace.has_gpu_support, bool)
    assert workspace.has_gpu_support == (workspace.has_cuda_support and
                                         workspace.NumCudaDevices() > 0)
    assert workspace.GlobalInit(["prog", "--caffe2_log_level=0", "--logtostderr=1"]) is True
    assert core.GlobalInit(["prog"]) is True
    with pytest.raises(TypeError):
        workspace.GlobalInit("--caffe2_log_level=0")
    assert "Relu" in workspace.RegisteredOperators()


# ---------------------------------------------------------------- bad input


def test_fetch_missing_blob():
    with pytest.raises(RuntimeError, match="'nowhere'.*does not exist"):
        workspace.FetchBlob("nowhere")


def test_run_unknown_net():
    with pytest.raises(RuntimeError, match="never_created"):
        workspace.RunNet("never_created")
    assert workspace.RunNet("never_created", allow_fail=True) is False


@pytest.mark.parametrize("bad", [
    np.zeros(3, np.complex64), np.zeros(2, np.float128),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
])
def test_feed_unsupported_dtype(bad):
    with pytest.raises(RuntimeError, match="'bad_blob'.*dtype.*not supported"):
        workspace.FeedBlob("bad_blob", bad)
    assert not workspace.HasBlob("bad_blob")


def test_feed_non_contiguous_array():
    # Views are fed by value (copied into C order), as Caffe2's feeder does.
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    workspace.FeedBlob("strided", strided)
    np.testing.assert_array_equal(workspace.FetchBlob("strided"), [[0, 2], [4, 6], [8, 10]])
    workspace.FeedBlob("transposed", np.arange(6, dtype=np.float64).reshape(2, 3).T)
    np.testing.assert_array_equal(workspace.FetchBlob("transposed"), [[0, 3], [1, 4], [2, 5]])


def test_feed_other_bad_values():
    with pytest.raises(RuntimeError, match="neither str nor bytes"):
        workspace.FeedBlob("objs", np.array(["ok", 3], dtype=object))
    with pytest.raises((TypeError, ValueError)):
        workspace.FeedBlob("ragged", [[1, 2], [3]])
    with pytest.raises(TypeError):
        workspace.FeedBlob(42, np.ones(1))


def test_bad_operators_and_nets():
    with pytest.raises(RuntimeError, match="'missing_input'"):
        workspace.RunOperatorOnce(relu_op("missing_input", "y"))
    with pytest.raises(RuntimeError, match="NoSuchOperator"):
        workspace.RunOperatorOnce(doppio_pb2.OperatorDef(type="NoSuchOperator"))
    with pytest.raises(RuntimeError):
        workspace.RunNetOnce(b"\xff\xff not a proto")
    with pytest.raises(ValueError, match="StringifyProto"):
        workspace.RunNetOnce(12)
    with pytest.raises(TypeError):
        workspace.RunNet(3.5)


# ---- Caffe2's probes and blob helpers ----

def test_capability_probes_are_the_extensions_answers():
    assert workspace.has_cuda_support is True and workspace.has_hip_support is False
    assert workspace.has_gpu_support is (workspace.NumCudaDevices() > 0)
    assert workspace.C.has_mkldnn is False and workspace.C.use_mkldnn is False
    assert isinstance(workspace.is_asan, bool)
    assert workspace.GetCUDAVersion() >= 11000 and workspace.GetCuDNNVersion() >= 8000
    count = workspace.NumCudaDevices()
    pattern = workspace.GetCudaPeerAccessPattern()
    assert pattern.shape == (count, count) and pattern.dtype == bool
    assert all(pattern[i, i] for i in range(count))
    if count == 0:
        with pytest.raises(RuntimeError, match="CUDA device 0 does not exist"):
            workspace.GetDeviceProperties(0)
    else:
        properties = workspace.GetDeviceProperties(0)
        assert properties["name"] and properties["major"] >= 1
    assert workspace.IsNUMAEnabled() is False


def test_serialize_and_deserialize_blobs():
    value = np.arange(6, dtype=np.int64).reshape(2, 3)
    workspace.FeedBlob("t", value)
    workspace.FeedBlob("s", b"raw\x00bytes")
    tensor_bytes = workspace.SerializeBlob("t")
    string_bytes = workspace.SerializeBlob("s")
    proto = doppio_pb2.BlobProto()
    proto.ParseFromString(string_bytes)
    assert (proto.name, proto.type, proto.content) == ("s", "std::string", b"raw\x00bytes")
    workspace.DeserializeBlob("t2", tensor_bytes)
    workspace.DeserializeBlob("s2", string_bytes)
    np.testing.assert_array_equal(workspace.FetchBlob("t2"), value)
    assert workspace.FetchBlob("s2") == b"raw\x00bytes"
    with pytest.raises(RuntimeError):
        workspace.DeserializeBlob("bad", b"\xff\xff not a proto")
    assert not workspace.HasBlob("bad")
    with pytest.raises(RuntimeError, match="'nope'"):
        workspace.SerializeBlob("nope")
    workspace.CreateBlob("empty")
    assert workspace.HasBlob("empty")


def test_blobs_dict_and_workspace_guard():
    workspace.blobs["a"] = np.ones(2, np.float32)
    assert "a" in workspace.blobs and "zz" not in workspace.blobs
    np.testing.assert_array_equal(workspace.blobs["a"], [1, 1])
    assert list(workspace.blobs) == ["a"] and len(workspace.blobs) == 1
    with pytest.raises(KeyError):
        workspace.blobs["zz"]
    before = workspace.CurrentWorkspace()
    with workspace.WorkspaceGuard("guarded"):
        assert workspace.CurrentWorkspace() == "guarded" and "a" not in workspace.blobs
    assert workspace.CurrentWorkspace() == before
    del workspace.blobs["a"]
    assert not workspace.HasBlob("a")
    with core.NameScope("scope"):
        assert workspace.GetNameScope() == "scope/"


def test_infer_shapes_and_types():
    net = core.Net("infer")
    net.FC(["x", "w", "b"], "y")
    net.Cast("y", "y_int", to=core.DataType.INT32)
    shapes, types = workspace.InferShapesAndTypes(
        [net], {"x": [4, 3], "w": [5, 3], "b": [5]})
    assert shapes["y"] == [4, 5] and types["y"] == core.DataType.FLOAT
    assert shapes["y_int"] == [4, 5] and types["y_int"] == core.DataType.INT32
    # Without shapes given, the workspace's tensors are the start.
    workspace.FeedBlob("x", np.zeros((2, 3), np.float64))
    workspace.FeedBlob("w", np.zeros((6, 3), np.float64))
    workspace.FeedBlob("b", np.zeros(6, np.float64))
    shapes, types = workspace.InferShapesAndTypes([net])
    assert shapes["y"] == [2, 6] and types["x"] == core.DataType.DOUBLE
    with pytest.raises(RuntimeError, match="list of ints"):
        workspace.InferShapesAndTypes([net], {"x": "bad"})


def test_workspace_objects_are_separate_workspaces():
    ws = workspace.C.Workspace()
    assert ws.blobs == {} and ws.nets == {}
    ws.create_blob("x").feed(np.array([-1.0, 2.0], np.float32))
    ws.run(core.CreateOperator("Relu", ["x"], ["y"]))
    np.testing.assert_array_equal(ws.blobs["y"].fetch(), [0.0, 2.0])
    assert not workspace.HasBlob("y")  # the current workspace is another one
    net = core.Net("object_net")
    net.Scale("y", "z", scale=3.0)
    handle = ws.create_net(net)
    assert handle.run() and set(ws.nets) == {"object_net"}
    np.testing.assert_array_equal(ws.blobs["z"].fetch(), [0.0, 6.0])
    plan = core.Plan("object_plan")
    plan.AddStep(core.ExecutionStep("step", net))
    assert ws.run(plan)
    with pytest.raises(RuntimeError, match="nope"):
        ws.run(core.CreateOperator("Relu", ["nope"], ["w"]))
    with pytest.raises(ValueError, match="Workspace.run"):
        ws.run(42)
    workspace.FeedBlob("here", np.ones(1, np.float32))
    assert "here" in workspace.C.Workspace.current.blobs and "here" not in ws.blobs


def test_predictor_runs_an_init_and_a_predict_net():
    rng = np.random.RandomState(11)
    w = rng.randn(3, 4).astype(np.float32)
    b = rng.randn(3).astype(np.float32)
    init = core.Net("predictor_init")
    init.GivenTensorFill([], "w", shape=[3, 4], values=w.flatten().tolist())
    init.GivenTensorFill([], "b", shape=[3], values=b.tolist())
    predict = core.Net("predictor_net")
    predict.Proto().external_input.extend(["data", "w", "b"])
    predict.FC(["data", "w", "b"], "y")
    predict.Proto().external_output.extend(["y"])
    predictor = workspace.Predictor(init.Proto().SerializeToString(),
                                    predict.Proto().SerializeToString())
    x = rng.randn(2, 4).astype(np.float32)
    out = predictor.run([x])
    assert len(out) == 1
    np.testing.assert_allclose(out[0], x @ w.T + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predictor.run({"data": 2 * x})[0], 2 * x @ w.T + b, rtol=1e-5,
                               atol=1e-5)
    assert not workspace.HasBlob("w")  # the predictor's workspace is its own
    with pytest.raises(ValueError, match="3 external inputs"):
        predictor.run([x, x, x, x])


def _conv_bn_relu_nets(rng):
    """A 1x1 Conv + SpatialBN(is_test) + Relu predictor and its numpy forward."""
    w = rng.randn(4, 3, 1, 1).astype(np.float32)
    scale, bias, mean = (rng.randn(4).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 2, 4).astype(np.float32)
    init = core.Net("cbr_init")
    for name, value in (("w", w), ("s", scale), ("b", bias), ("rm", mean), ("rv", var)):
        init.GivenTensorFill([], name, shape=list(value.shape), values=value.flatten().tolist())
    predict = core.Net("cbr_net")
    predict.Proto().external_input.extend(["data", "w", "s", "b", "rm", "rv"])
    predict.Conv(["data", "w"], "conv", kernel=1)
    predict.SpatialBN(["conv", "s", "b", "rm", "rv"], "bn", is_test=1, epsilon=1e-5)
    predict.Relu("bn", "y")
    predict.Proto().external_output.extend(["y"])

    def forward(x):
        conv = np.einsum("oc,nchw->nohw", w[:, :, 0, 0], x)
        per_channel = [v.reshape(1, 4, 1, 1) for v in (scale, bias, mean, var)]
        s, b, m, v = per_channel
        return np.maximum((conv - m) / np.sqrt(v + 1e-5) * s + b, 0)
    return init, predict, forward


def test_predictor_applies_the_inference_passes_unless_told_not_to():
    rng = np.random.RandomState(12)
    init, predict, forward = _conv_bn_relu_nets(rng)
    x = rng.randn(2, 3, 5, 5).astype(np.float32)
    optimized = workspace.Predictor(init.Proto(), predict.Proto())
    given = workspace.Predictor(init.Proto(), predict.Proto(), optimize=False)
    assert [op.type for op in optimized.running_net.op] == ["ConvFusion"]
    assert [op.type for op in given.running_net.op] == ["Conv", "SpatialBN", "Relu"]
    for predictor in (optimized, given):
        np.testing.assert_allclose(predictor.run([x])[0], forward(x), rtol=1e-5, atol=1e-5)
    listed = workspace.Predictor(init.Proto(), predict.Proto(), optimize="conv_bn")
    assert [op.type for op in listed.running_net.op] == ["Conv", "Relu"]


def test_blob_handles_serialize_and_non_tensor_blobs_fetch_as_descriptions():
    ws = workspace.C.Workspace()
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    ws.create_blob("x").feed(value)
    copy = ws.create_blob("x_copy")
    copy.deserialize(ws.blobs["x"].serialize("renamed"))
    np.testing.assert_array_equal(copy.fetch(), value)
    proto = doppio_pb2.BlobProto()
    proto.ParseFromString(ws.blobs["x"].serialize("renamed"))
    assert proto.name == "renamed"
    with pytest.raises(TypeError):
        ws.create_net("not a net")
    # A blob holding a C++ object (a DB reader) fetches as its description.
    workspace.RunOperatorOnce(core.CreateOperator("CreateMutex", [], ["mutex"]))
    described = workspace.FetchBlob("mutex")
    assert isinstance(described, bytes) and b"mutex" in described


def test_get_operator_cost_uses_the_workspace_shapes():
    workspace.FeedBlob("a", np.zeros((4, 5), np.float32))
    workspace.FeedBlob("w", np.zeros((3, 5), np.float32))
    workspace.FeedBlob("b", np.zeros(3, np.float32))
    op = core.CreateOperator("FC", ["a", "w", "b"], ["y"])
    flops, written = workspace.GetOperatorCost(op.SerializeToString(), ["a", "w", "b"])
    # 4 x 3 outputs, each a 5-long dot product (2 flops per term) plus a bias.
    assert flops >= 2 * 4 * 3 * 5
    assert written == 4 * 3 * 4



# ---- immediate mode, Blob.tensor(), the transform registry ----


def test_immediate_mode_runs_ops_in_its_own_workspace():
    workspace.StartImmediate(i_know=True)
    try:
        root = workspace._immediate_root_folder
        assert workspace.IsImmediate() and os.path.isdir(root)
        net = core.Net('immediate')
        net.ConstantFill([], 'filled', shape=[2, 3], value=2.0)
        assert workspace.ImmediateBlobs() == ['filled']
        np.testing.assert_array_equal(workspace.FetchImmediate('filled'), np.full((2, 3), 2.0))
        assert not workspace.HasBlob('filled')
        workspace.FeedImmediate('filled', np.zeros(1, np.float32))
        np.testing.assert_array_equal(workspace.FetchImmediate('filled'), [0.0])
    finally:
        workspace.StopImmediate()
    assert not workspace.IsImmediate() and not os.path.exists(root)
    with pytest.raises(RuntimeError):
        workspace.FetchImmediate('filled')
    core.Net('after').ConstantFill([], 'later', shape=[1], value=1.0)  # runs nothing now


def test_blob_tensor_writes_through_and_outlives_the_blob():
    ws = workspace.C.Workspace()
    ws.create_blob('t').feed(np.array([1.5, 2.5, 3.5]))
    tensor = ws.blobs['t'].tensor()
    tensor.data[0] = 7.0
    np.testing.assert_array_equal(ws.blobs['t'].fetch(), [7.0, 2.5, 3.5])
    tensor.init([2, 2], doppio_pb2.TensorProto.INT32)
    view = tensor.data
    view[1, 0] = 9
    np.testing.assert_array_equal(ws.blobs['t'].fetch(), [[0, 0], [9, 0]])
    assert tensor._shape == [2, 2]
    with pytest.raises(RuntimeError, match='string'):
        tensor.init([1], doppio_pb2.TensorProto.STRING)
    ws.blobs['t'].feed(np.zeros(100, np.float64))  # the old storage goes
    view[0, 0] = 5  # still valid memory, no longer the blob's
    assert view[0, 0] == 5 and ws.blobs['t'].fetch().shape == (100,)


def test_apply_transform():
    net = core.Net('conv_net')
    net.Conv(['x', 'w', 'b'], 'y', kernel=3, engine='CUDNN')
    net.Relu('y', 'z')
    out = workspace.ApplyTransform('ConvToNNPack', net.Proto())
    assert [op.engine for op in out.op] == ['NNPACK', '']
    assert net.Proto().op[0].engine == 'CUDNN'  # the input is not modified
    with pytest.raises(RuntimeError, match="no transform named 'nope'.*ConvToNNPack"):
        workspace.ApplyTransform('nope', net.Proto())
    init = core.Net('init')
    init.ConstantFill([], 'x', shape=[1, 2, 5, 5], value=1.0)
    init.ConstantFill([], 'w', shape=[2, 2, 3, 3], value=0.5)
    init.ConstantFill([], 'b', shape=[2], value=0.0)
    chosen = workspace.ApplyTransformIfFaster('ConvToNNPack', net.Proto(), init.Proto(),
                                              warmup_runs=1, main_runs=2)
    assert [op.engine for op in chosen.op] in (['NNPACK', ''], ['CUDNN', ''])
    workspace.RunNetOnce(init)
    workspace.RunNetOnce(chosen)  # either way it runs, on the default engine
    np.testing.assert_allclose(workspace.FetchBlob('z'), np.full((1, 2, 3, 3), 9.0))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
