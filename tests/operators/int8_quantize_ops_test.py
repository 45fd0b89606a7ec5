"""Int8Quantize, Int8Dequantize and the Int8 fills against numpy; the
Int8TensorCPU blob through Python (feed, FetchInt8Blob) and Caffe2's
serialized form (BlobProto type Int8TensorCPU with a QTensorProto); bad
arguments and malformed protos."""
import numpy as np
import pytest

import op_harness as h
from doppio import _C, workspace
from doppio.proto import doppio_pb2


def _quantize_reference(x, scale, zero_point):
    # Caffe2's QuantizeUint8: float32 division, round half to even, clamp.
    q = np.rint(np.float32(x) / np.float32(scale)).astype(np.float64) + zero_point
    return np.clip(q, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("scale,zero_point", [(0.05, 128), (0.5, 0), (1.0 / 256, 3)])
def test_quantize_matches_numpy(scale, zero_point):
    rng = np.random.RandomState(0)
    x = (rng.randn(4, 5, 6) * 4).astype(np.float32)
    # Exact ties: x / scale = k + 0.5 must round to even, as Caffe2's does.
    x.flat[:6] = (np.arange(6) + 0.5) * np.float32(scale)
    op = h.make_op("Int8Quantize", ["X"], ["Y"], Y_scale=scale, Y_zero_point=zero_point)
    data, s, z = h.run_op(op, [x])[0]
    assert data.dtype == np.uint8 and data.shape == x.shape
    np.testing.assert_array_equal(data, _quantize_reference(x, scale, zero_point))
    assert s == np.float32(scale) and z == zero_point


def test_quantize_saturates_and_maps_nan_to_zero_point():
    x = np.array([1e30, -1e30, np.inf, -np.inf, np.nan, 0.0], np.float32)
    op = h.make_op("Int8Quantize", ["X"], ["Y"], Y_scale=0.1, Y_zero_point=7)
    data = h.run_op(op, [x])[0][0]
    np.testing.assert_array_equal(data, [255, 0, 255, 0, 7, 7])


def test_dequantize_matches_numpy():
    rng = np.random.RandomState(1)
    q = rng.randint(0, 256, size=(3, 7)).astype(np.uint8)
    op = h.make_op("Int8Dequantize", ["X"], ["Y"])
    y = h.run_op(op, [h.Int8(q, 0.037, 100)])[0]
    want = (q.astype(np.int32) - 100).astype(np.float32) * np.float32(0.037)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, want)


def test_quantize_dequantize_round_trip_is_within_half_a_step():
    x = np.linspace(-3, 3, 101).astype(np.float32)
    ops = [h.make_op("Int8Quantize", ["X"], ["Q"], Y_scale=0.03, Y_zero_point=120),
           h.make_op("Int8Dequantize", ["Q"], ["Y"])]
    net = doppio_pb2.NetDef(name="round_trip", op=ops)
    with h._FreshWorkspace():
        _C.feed_blob("X", x)
        _C.run_net_once(net.SerializeToString())
        y = _C.fetch_blob("Y")
    assert np.abs(y - x).max() <= 0.015 + 1e-6


def test_given_tensor_fills():
    values = bytes(range(0, 240, 10))
    op = h.make_op("Int8GivenTensorFill", [], ["W"], values=values, shape=[2, 3, 4],
                   Y_scale=0.25, Y_zero_point=9)
    data, scale, zero_point = h.run_op(op, [])[0]
    np.testing.assert_array_equal(data, np.frombuffer(values, np.uint8).reshape(2, 3, 4))
    assert (scale, zero_point) == (0.25, 9)
    op = h.make_op("Int8GivenIntTensorFill", [], ["b"], values=[-5, 0, 2 ** 31 - 1],
                   shape=[3], Y_scale=0.001)
    data, scale, zero_point = h.run_op(op, [])[0]
    assert data.dtype == np.int32
    np.testing.assert_array_equal(data, [-5, 0, 2 ** 31 - 1])


@pytest.mark.parametrize("op_type,values", [
    ("Int8GivenTensorFill", b"\x01\x02\x03"),
    ("Int8GivenIntTensorFill", [1, 2, 3]),
])
def test_fill_shape_must_match_values(op_type, values):
    op = h.make_op(op_type, [], ["Y"], values=values, shape=[2, 2])
    h.assert_op_error(op, [], "shape [2, 2] has 4 elements but 3 values")


def test_int_fill_refuses_values_beyond_int32():
    op = h.make_op("Int8GivenIntTensorFill", [], ["Y"], values=[2 ** 31], shape=[1])
    h.assert_op_error(op, [], "does not fit int32")


@pytest.mark.parametrize("args,fragment", [
    (dict(Y_scale=0.0), "Y_scale 0 must be finite and positive"),
    (dict(Y_scale=-1.0), "must be finite and positive"),
    (dict(Y_scale=float("nan")), "must be finite and positive"),
    (dict(Y_scale=1.0, Y_zero_point=256), "Y_zero_point 256 is outside"),
    (dict(Y_scale=1.0, Y_zero_point=-1), "Y_zero_point -1 is outside"),
])
def test_bad_output_quantization(args, fragment):
    op = h.make_op("Int8Quantize", ["X"], ["Y"], **args)
    h.assert_op_error(op, [np.zeros(3, np.float32)], fragment)


def test_wrong_input_kinds_name_the_blob():
    op = h.make_op("Int8Dequantize", ["X"], ["Y"])
    h.assert_op_error(op, [np.zeros(3, np.uint8)], "'X'", "Int8TensorCPU")
    op = h.make_op("Int8Quantize", ["X"], ["Y"], Y_scale=1.0)
    h.assert_op_error(op, [np.zeros(3, np.float64)], "'X' must be float32")
    op = h.make_op("Int8Dequantize", ["B"], ["Y"])
    h.assert_op_error(op, [h.Int8(np.zeros(3, np.int32), 1.0, 0)], "'B'", "int32")
    op = h.make_op("Int8Dequantize", ["X"], ["Y"])
    h.assert_op_error(op, [h.Int8(np.zeros(3, np.uint8), 1.0, 300)], "'X'",
                      "zero point 300, outside uint8's [0, 255]")


def test_workspace_feeds_and_fetches_int8_blobs():
    with h._FreshWorkspace():
        q = np.arange(12, dtype=np.uint8).reshape(3, 4)
        workspace.FeedBlob("q", workspace.Int8Tensor(q, 0.5, 4))
        got = workspace.FetchInt8Blob("q")
        np.testing.assert_array_equal(got.data, q)
        assert (got.scale, got.zero_point) == (0.5, 4)
        np.testing.assert_array_equal(workspace.FetchInt8BlobRealVal("q"),
                                      (q.astype(np.float32) - 4) * 0.5)
        with pytest.raises(TypeError, match="FetchInt8Blob"):
            workspace.FetchBlob("q")
        workspace.FeedBlob("f", np.ones(2, np.float32))
        with pytest.raises(TypeError, match="not an Int8 blob"):
            workspace.FetchInt8Blob("f")
        with pytest.raises(RuntimeError, match="uint8 or int32"):
            workspace.FeedBlob("bad", workspace.Int8Tensor(np.ones(2, np.float32), 1.0, 0))
        with pytest.raises(RuntimeError, match="finite and positive"):
            workspace.FeedBlob("bad", workspace.Int8Tensor(q, 0.0, 0))


@pytest.mark.parametrize("dtype,data_type", [(np.uint8, doppio_pb2.TensorProto.UINT8),
                                             (np.int32, doppio_pb2.TensorProto.INT32)])
def test_serialized_form_is_caffe2s(dtype, data_type):
    data = (np.arange(6).reshape(2, 3) * 40).astype(dtype)
    with h._FreshWorkspace():
        _C.feed_int8_blob("w", data, 0.125, 17)
        proto = doppio_pb2.BlobProto.FromString(_C.serialize_blob("w"))
        assert proto.type == "Int8TensorCPU" and proto.name == "w"
        q = proto.qtensor
        assert list(q.dims) == [2, 3] and q.precision == 8 and not q.is_signed
        assert q.scale == 0.125 and q.bias == 17 and q.data_type == data_type
        assert list(q.data) == data.ravel().tolist()
        _C.deserialize_blob("w2", proto.SerializeToString())
        data2, scale2, zero_point2 = _C.fetch_blob("w2")
        np.testing.assert_array_equal(data2, data)
        assert data2.dtype == dtype and (scale2, zero_point2) == (0.125, 17)


def _qtensor_blob(**fields):
    proto = doppio_pb2.BlobProto(name="q", type="Int8TensorCPU")
    q = proto.qtensor
    q.precision, q.scale, q.bias, q.is_signed = 8, 0.5, 3, False
    q.data_type = doppio_pb2.TensorProto.UINT8
    q.dims.extend([2])
    q.data.extend([1, 2])
    for name, value in fields.items():
        if isinstance(value, list):
            getattr(q, name)[:] = value
        else:
            setattr(q, name, value)
    return proto.SerializePartialToString()


@pytest.mark.parametrize("fields,fragment", [
    (dict(data=[1, 300]), "value 300 at 1, outside uint8's range"),
    (dict(data=[1]), "has 1 values"),
    (dict(dims=[-2]), "-2"),
    (dict(scale=0.0), "scale 0"),
    (dict(scale=float("inf")), "scale inf"),
    (dict(bias=0.5), "not an integer"),
    (dict(data_type=doppio_pb2.TensorProto.FLOAT), "data_type FLOAT"),
    (dict(is_multiparam=True, scales=[0.5, 0.25]), "per-channel quantization"),
])
def test_malformed_qtensor_protos_are_refused(fields, fragment):
    with h._FreshWorkspace():
        with pytest.raises(RuntimeError) as info:
            _C.deserialize_blob("q", _qtensor_blob(**fields))
        assert fragment in str(info.value) and "'q'" in str(info.value)
        assert not _C.has_blob("q")


def test_missing_qtensor_is_refused():
    proto = doppio_pb2.BlobProto(name="q", type="Int8TensorCPU")
    with h._FreshWorkspace():
        with pytest.raises(RuntimeError, match="carries no qtensor"):
            _C.deserialize_blob("q", proto.SerializeToString())


if __name__ == "__main__":
    h.run_main(__file__)
