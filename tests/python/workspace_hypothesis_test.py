"""Property tests of doppio.workspace and doppio.core, drawn by hypothesis:
blobs round-trip bit for bit in every dtype and shape (0-d, empty dims,
strided views), operator arguments encode into the Argument fields Caffe2
uses and reach the C++ runtime intact, and Net.Clone / AppendNet keep ops."""
import os
import sys

import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest

from doppio import core, workspace
from doppio.proto import doppio_pb2

# The same profiles as tests/operators/op_harness.py: few derandomized
# examples by default, DOPPIO_HYPOTHESIS_PROFILE=thorough for many more.
hypothesis.settings.register_profile(
    "doppio", max_examples=12, deadline=None, derandomize=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large,
                           hypothesis.HealthCheck.function_scoped_fixture])
hypothesis.settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow,
                           hypothesis.HealthCheck.data_too_large,
                           hypothesis.HealthCheck.function_scoped_fixture])
hypothesis.settings.load_profile(os.environ.get("DOPPIO_HYPOTHESIS_PROFILE", "doppio"))

NUMERIC_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                  np.float16, np.float32, np.float64]
shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
# Text that UTF-8 can encode (no lone surrogates).
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.ResetWorkspace()
    yield
    workspace.ResetWorkspace()


def numeric_arrays(dtype):
    # Floats include NaN, infinities and -0.0: the comparison is on bytes.
    return hnp.arrays(dtype, shapes)


@hypothesis.given(st.sampled_from(NUMERIC_DTYPES).flatmap(numeric_arrays))
def test_numeric_round_trip_is_bit_exact(array):
    workspace.FeedBlob("blob", array)
    fetched = workspace.FetchBlob("blob")
    assert fetched.dtype == array.dtype
    assert fetched.shape == array.shape
    assert fetched.tobytes() == array.tobytes()


@hypothesis.given(st.sampled_from(NUMERIC_DTYPES).flatmap(
    lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6))),
    st.data())
def test_strided_views_are_fed_as_their_values(array, data):
    # Any basic-index view: steps (also negative), transposes.
    index = data.draw(hnp.basic_indices(array.shape, allow_ellipsis=False))
    view = array[index]
    if view.ndim > 1 and data.draw(st.booleans()):
        view = view.T
    view = np.asarray(view)
    workspace.FeedBlob("view", view)
    fetched = workspace.FetchBlob("view")
    assert fetched.shape == view.shape
    assert fetched.tobytes() == np.ascontiguousarray(view).tobytes()


@hypothesis.given(shapes.flatmap(lambda shape: st.tuples(
    st.just(shape),
    st.lists(st.one_of(texts, st.binary(max_size=8)),
             min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))))
def test_string_round_trip(shape_and_values):
    shape, values = shape_and_values
    array = np.empty(len(values), dtype=object)
    array[:] = values
    array = array.reshape(shape)
    workspace.FeedBlob("strings", array)
    fetched = workspace.FetchBlob("strings")
    assert fetched.dtype == object and fetched.shape == shape
    expected = [v if isinstance(v, bytes) else v.encode("utf-8") for v in values]
    assert fetched.reshape(-1).tolist() == expected


# ---------------------------------------------------------------- arguments

scalars = st.one_of(
    st.integers(min_value=-2**63, max_value=2**63 - 1),
    st.booleans(),
    st.floats(width=32, allow_nan=False),
    texts,
    st.binary(max_size=8),
)
lists = st.one_of(
    st.lists(st.integers(min_value=-2**63, max_value=2**63 - 1), min_size=1, max_size=5),
    st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=5),
    st.lists(texts, min_size=1, max_size=5),
)
argument_names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


def expected_fields(value):
    """The one Argument field Caffe2's utils.MakeArgument fills, and its value
    as the proto holds it."""
    if isinstance(value, bool):
        return "i", int(value)
    if isinstance(value, int):
        return "i", value
    if isinstance(value, float):
        return "f", float(np.float32(value))
    if isinstance(value, str):
        return "s", value.encode("utf-8")
    if isinstance(value, bytes):
        return "s", value
    first = value[0]
    if isinstance(first, float):
        return "floats", [float(np.float32(v)) for v in value]
    if isinstance(first, int):
        return "ints", list(value)
    return "strings", [v.encode("utf-8") for v in value]


@hypothesis.given(st.dictionaries(argument_names, st.one_of(scalars, lists), max_size=6))
def test_create_operator_argument_encoding(kwargs):
    kwargs.pop("random_seed", None)  # goes into the device option instead
    op = core.CreateOperator("Relu", ["x"], ["y"], **kwargs)
    parsed = doppio_pb2.OperatorDef.FromString(op.SerializeToString())
    assert parsed == op
    assert [arg.name for arg in parsed.arg] == list(kwargs)
    for arg in parsed.arg:
        field, value = expected_fields(kwargs[arg.name])
        set_fields = [f.name for f, _ in arg.ListFields() if f.name != "name"]
        assert set_fields == [field], (arg, kwargs[arg.name])
        got = getattr(arg, field)
        assert (list(got) if field in ("floats", "ints", "strings") else got) == value


@hypothesis.given(st.lists(st.integers(min_value=0, max_value=4), max_size=4),
                  st.floats(width=32, allow_nan=False, allow_infinity=False),
                  st.sampled_from([doppio_pb2.TensorProto.FLOAT, doppio_pb2.TensorProto.DOUBLE,
                                   doppio_pb2.TensorProto.INT32]))
def test_arguments_reach_the_runtime(shape, value, dtype):
    # ConstantFill reads ints (shape), a float (value) and an int (dtype).
    if dtype == doppio_pb2.TensorProto.INT32:
        # Integers a float32 holds exactly, so the conversion has one answer.
        value = float(int(max(min(value, 2**24), -2**24)))
    workspace.RunOperatorOnce(core.CreateOperator(
        "ConstantFill", [], ["filled"], shape=shape, value=value, dtype=dtype))
    fetched = workspace.FetchBlob("filled")
    numpy_dtype = {doppio_pb2.TensorProto.FLOAT: np.float32,
                   doppio_pb2.TensorProto.DOUBLE: np.float64,
                   doppio_pb2.TensorProto.INT32: np.int32}[dtype]
    assert fetched.shape == tuple(shape) and fetched.dtype == numpy_dtype
    # The argument is a 32-bit float on the wire, whatever the output type.
    expected = np.full(shape, np.float32(value)).astype(numpy_dtype)
    np.testing.assert_array_equal(fetched, expected)


# ---------------------------------------------------------------- nets

blob_names = st.sampled_from(["a", "b", "c", "d", "w/x", "gpu_0/y"])
unary_ops = st.tuples(st.sampled_from(["Relu", "Sigmoid", "Tanh", "Scale"]),
                      blob_names, blob_names, st.floats(-4, 4, width=32))


def build_net(name, ops):
    net = core.Net(name)
    for op_type, source, target, scale in ops:
        if op_type == "Scale":
            getattr(net, op_type)([source], [target], scale=scale)
        else:
            getattr(net, op_type)([source], [target])
    return net


def op_tuples(net):
    return [(op.type, list(op.input), list(op.output),
             [(arg.name, arg.f) for arg in op.arg]) for op in net.Proto().op]


def expected_tuples(ops, remap=None):
    remap = remap or {}
    return [(op_type, [remap.get(source, source)], [remap.get(target, target)],
             [("scale", float(np.float32(scale)))] if op_type == "Scale" else [])
            for op_type, source, target, scale in ops]


@hypothesis.given(st.lists(unary_ops, max_size=6),
                  st.dictionaries(blob_names, st.sampled_from(["r1", "r2", "r/3"])))
def test_clone_keeps_ops_and_applies_blob_remap(ops, remap):
    net = build_net("original", ops)
    clone = net.Clone("the_clone")
    assert clone.Name() != net.Name()
    assert op_tuples(clone) == expected_tuples(ops)
    assert list(clone.Proto().op) == list(net.Proto().op)
    remapped = net.Clone("remapped", blob_remap=remap)
    assert op_tuples(remapped) == expected_tuples(ops, remap)
    # Cloning did not touch the original.
    assert op_tuples(net) == expected_tuples(ops)
    if ops:
        keep = list(range(0, len(ops), 2))
        masked = net.Clone("masked", op_id_mask=keep)
        assert op_tuples(masked) == [expected_tuples(ops)[i] for i in keep]


@hypothesis.given(st.lists(unary_ops, max_size=5), st.lists(unary_ops, max_size=5))
def test_append_net_concatenates_ops(first_ops, second_ops):
    first = build_net("first", first_ops)
    second = build_net("second", second_ops)
    first.AppendNet(second)
    assert op_tuples(first) == expected_tuples(first_ops) + expected_tuples(second_ops)
    assert op_tuples(second) == expected_tuples(second_ops)
    # The appended ops are copies: editing them leaves `second` alone.
    for op in first.Proto().op:
        op.name = "edited"
    assert all(op.name == "" for op in second.Proto().op)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
