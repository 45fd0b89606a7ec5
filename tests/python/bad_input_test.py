"""Bad input to the Python API raises a Python exception whose message names
the blob, net or op at fault; the interpreter and the workspace stay usable
after each one (checked after every test, in this same interpreter).
Non-contiguous arrays are not bad input: they are fed by value, as Caffe2's
feeder copies them."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from doppio import brew, core, model_helper, workspace
from doppio.proto import doppio_pb2


@pytest.fixture(autouse=True)
def interpreter_still_works():
    workspace.ResetWorkspace()
    yield
    # Whatever the test provoked, the runtime still feeds, runs and fetches.
    workspace.FeedBlob("sanity_x", np.array([-1.0, 2.0], np.float32))
    workspace.RunOperatorOnce(doppio_pb2.OperatorDef(type="Relu", input=["sanity_x"],
                                                     output=["sanity_y"]))
    np.testing.assert_array_equal(workspace.FetchBlob("sanity_y"), [0.0, 2.0])
    workspace.ResetWorkspace()


# ---------------------------------------------------------------- feeding

@pytest.mark.parametrize("array", [
    np.zeros(3, np.complex64),
    np.zeros(2, np.complex128),
    np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]),  # structured
    np.zeros(2, dtype="V4"),                           # raw bytes
    np.zeros(2, np.float128),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
    np.array([1, 2], dtype="timedelta64[s]"),
], ids=lambda a: str(a.dtype))
def test_unsupported_dtype(array):
    with pytest.raises(RuntimeError) as error:
        workspace.FeedBlob("unsupported_blob", array)
    message = str(error.value)
    assert "'unsupported_blob'" in message and "not supported" in message
    assert "float16/32/64" in message  # says what is supported
    assert not workspace.HasBlob("unsupported_blob")


@pytest.mark.parametrize("elements, type_name", [
    ([1, 2], "int"),
    (["ok", None], "NoneType"),
    ([np.zeros(2), np.ones(3)], "ndarray"),
    ([3.5], "float"),
])
def test_object_array_of_non_strings(elements, type_name):
    array = np.empty(len(elements), dtype=object)
    array[:] = elements
    with pytest.raises(RuntimeError) as error:
        workspace.FeedBlob("objects", array)
    message = str(error.value)
    assert "'objects'" in message and "neither str nor bytes" in message
    assert type_name in message
    assert not workspace.HasBlob("objects")


def test_non_contiguous_arrays_are_fed_by_value():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    views = {
        "strided": base[:, :, ::2],
        "transposed": base.T,
        "negative": base[::-1, :, ::-3],
        "fortran": np.asfortranarray(base),
        "column": base[:, 1, :][:, 2],
        "broadcast": np.broadcast_to(np.float64(7.5), (2, 3)),
    }
    expected = {
        "strided": [[[0, 2], [4, 6], [8, 10]], [[12, 14], [16, 18], [20, 22]]],
        "transposed": [[[base[j, k, i] for j in range(2)] for k in range(3)]
                       for i in range(4)],
        "negative": [[[12 + 4 * r + c for c in (3, 0)] for r in range(3)],
                     [[4 * r + c for c in (3, 0)] for r in range(3)]],
        "fortran": base.tolist(),
        "column": [6, 18],
        "broadcast": [[7.5] * 3] * 2,
    }
    for name, view in views.items():
        workspace.FeedBlob(name, view)
        fetched = workspace.FetchBlob(name)
        assert fetched.dtype == view.dtype, name
        assert fetched.shape == view.shape, name
        np.testing.assert_array_equal(fetched, np.array(expected[name]), err_msg=name)
    strings = np.array([b"a", b"bb", b"ccc", b"dddd"], dtype=object)[::-2]
    workspace.FeedBlob("strings", strings)
    assert workspace.FetchBlob("strings").tolist() == [b"dddd", b"bb"]


@pytest.mark.skipif(workspace.NumCudaDevices() > 0, reason="needs a machine without CUDA")
def test_feed_to_cuda_without_a_gpu():
    gpu = core.DeviceOption(doppio_pb2.CUDA, 1)
    with pytest.raises(RuntimeError) as error:
        workspace.FeedBlob("on_gpu", np.zeros(2, np.float32), device_option=gpu)
    assert "'on_gpu'" in str(error.value) and "CUDA" in str(error.value)
    with core.DeviceScope(gpu):
        with pytest.raises(RuntimeError, match="'scoped'.*CUDA"):
            workspace.FeedBlob("scoped", np.zeros(2, np.float32))
    assert not workspace.HasBlob("on_gpu") and not workspace.HasBlob("scoped")


# ---------------------------------------------------------------- blobs and nets

def test_fetch_missing_blob():
    with pytest.raises(RuntimeError, match="'never_fed'.*does not exist"):
        workspace.FetchBlob("never_fed")


def test_run_unknown_net():
    with pytest.raises(RuntimeError, match="'no_such_net'"):
        workspace.RunNet("no_such_net")


def test_error_kinds_are_their_python_types_and_runtime_errors():
    from doppio import errors
    with pytest.raises(errors.NotFoundError) as missing:
        workspace.FetchBlob("never_fed")
    assert isinstance(missing.value, LookupError) and isinstance(missing.value, RuntimeError)
    with pytest.raises(LookupError, match="'no_such_net'"):
        workspace.RunNet("no_such_net")
    workspace.FeedBlob("x", np.zeros((2, 3), np.float32))
    with pytest.raises(errors.InvalidArgumentError) as bad:
        workspace.RunOperatorOnce(core.CreateOperator("Reshape", ["x"], ["y", "old"],
                                                      shape=[-1, -1]))
    assert isinstance(bad.value, ValueError) and isinstance(bad.value, RuntimeError)
    assert "more than one -1" in str(bad.value) and "reshape_op.cc:" in str(bad.value)
    with pytest.raises(ValueError, match="num_iter"):
        workspace.C.run_net("no_such_net", -1)
    # Failures that are nobody's argument stay plain RuntimeErrors.
    with pytest.raises(RuntimeError) as plain:
        workspace.RunOperatorOnce(core.CreateOperator("Load", [], ["w"], db="/nonexistent/db",
                                                      db_type="minidb", absolute_path=1))
    assert not isinstance(plain.value, (ValueError, LookupError))


def test_create_net_with_unknown_op_type_suggests_names():
    net = doppio_pb2.NetDef(name="typo_net")
    net.op.add(type="Rellu", input=["x"], output=["y"])
    with pytest.raises(RuntimeError) as error:
        workspace.CreateNet(net)
    message = str(error.value)
    assert "'Rellu'" in message and "typo_net" in message
    assert "did you mean" in message and "Relu" in message
    assert "typo_net" not in workspace.Nets()


@pytest.mark.parametrize("payload", [
    b"\xff\xff\xff not a proto",
    b"\x0a\x10short",                      # a name field longer than the bytes
    doppio_pb2.NetDef(name="cut").SerializeToString() + b"\x12",
])
def test_malformed_netdef_bytes(payload):
    for call in (workspace.CreateNet, workspace.RunNetOnce):
        with pytest.raises(RuntimeError, match="cannot parse the NetDef"):
            call(payload)


def test_op_failure_names_op_and_blob():
    workspace.FeedBlob("a", np.ones(2, np.float32))
    workspace.FeedBlob("b", np.ones(3, np.float32))
    net = core.Net("mismatch_net")
    net.Add(["a", "b"], "c")
    workspace.CreateNet(net)
    with pytest.raises(RuntimeError) as error:
        workspace.RunNet(net)
    message = str(error.value)
    assert "Add" in message and "mismatch_net" in message
    with pytest.raises(RuntimeError, match="'absent'"):
        workspace.RunOperatorOnce(core.CreateOperator("Relu", ["absent"], ["y"]))


# ---------------------------------------------------------------- gradients

def small_model(name):
    model = model_helper.ModelHelper(name)
    fc = brew.fc(model, "data", "fc", dim_in=3, dim_out=2)
    model.net.SquaredL2Distance([fc, "label"], "dist")
    return model


def test_add_gradient_operators_without_a_loss():
    model = small_model("no_loss_model")
    with pytest.raises(RuntimeError, match="no loss blobs"):
        model.AddGradientOperators([])


# A loss the net only reads (an input) is accepted, as in Caffe2: its
# gradient is the given one and no op is added. A blob the net never
# touches is an error.
@pytest.mark.parametrize("loss", ["not_made_here", "dist_typo"])
def test_add_gradient_operators_with_a_loss_the_net_does_not_produce(loss):
    model = small_model("wrong_loss_model")
    with pytest.raises(RuntimeError) as error:
        model.AddGradientOperators([loss])
    message = str(error.value)
    assert "'{}'".format(loss) in message and model.net.Name() in message


# ---------------------------------------------------------------- other values

def test_wrong_python_types():
    with pytest.raises(TypeError, match="blob name"):
        workspace.FeedBlob(3.5, np.ones(1))
    with pytest.raises(TypeError):
        workspace.RunNet(["a list"])
    with pytest.raises(ValueError, match="StringifyProto"):
        workspace.CreateNet(object())
    with pytest.raises(TypeError):
        workspace.FeedBlob("ragged", [[1, 2], [3]])


def test_a_fresh_interpreter_survives_them_all():
    # A crash (not an exception) in any call ends this subprocess early.
    script = textwrap.dedent("""
        import numpy as np
        from doppio import core, workspace
        from doppio.proto import doppio_pb2
        bad_net = doppio_pb2.NetDef(name="n")
        bad_net.op.add(type="NoSuchOp")
        calls = [
            lambda: workspace.FeedBlob("c", np.zeros(2, np.complex64)),
            lambda: workspace.FeedBlob("s", np.zeros(2, dtype=[("a", "i4")])),
            lambda: workspace.FeedBlob("o", np.array([object()], dtype=object)),
            lambda: workspace.FetchBlob("missing"),
            lambda: workspace.RunNet("missing"),
            lambda: workspace.CreateNet(bad_net),
            lambda: workspace.CreateNet(b"\\xff\\xff"),
            lambda: workspace.RunPlan(b"\\xff\\xff"),
        ]
        for call in calls:
            try:
                call()
            except Exception as error:
                assert str(error)
            else:
                raise SystemExit("no exception from a bad call")
        workspace.FeedBlob("fine", np.ones((3, 3))[::2, ::2])
        print("survived", workspace.FetchBlob("fine").sum())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "survived 4.0" in result.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
