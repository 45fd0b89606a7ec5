"""ONNX tensors and element types as numpy arrays and Doppio fill ops."""

import numpy as np
from onnx import TensorProto as OnnxTensor

from doppio.onnx.errors import InvalidModelError, UnsupportedError
from doppio.proto import doppio_pb2

_C2 = doppio_pb2.TensorProto

# numpy has no bfloat16: this dtype stands for it in the converter's type
# tracking (its storage, uint16 bit patterns, as onnx.numpy_helper gives
# bfloat16 tensors).
BFLOAT16 = np.dtype([('bfloat16', '<u2')])

# ONNX element type -> (numpy dtype, Doppio/Caffe2 TensorProto.DataType).
# Types Doppio tensors cannot hold (complex, 8-bit floats) are absent on
# purpose.
_TYPES = {
    OnnxTensor.FLOAT: (np.dtype(np.float32), _C2.FLOAT),
    OnnxTensor.DOUBLE: (np.dtype(np.float64), _C2.DOUBLE),
    OnnxTensor.FLOAT16: (np.dtype(np.float16), _C2.FLOAT16),
    OnnxTensor.INT8: (np.dtype(np.int8), _C2.INT8),
    OnnxTensor.INT16: (np.dtype(np.int16), _C2.INT16),
    OnnxTensor.INT32: (np.dtype(np.int32), _C2.INT32),
    OnnxTensor.INT64: (np.dtype(np.int64), _C2.INT64),
    OnnxTensor.UINT8: (np.dtype(np.uint8), _C2.UINT8),
    OnnxTensor.UINT16: (np.dtype(np.uint16), _C2.UINT16),
    OnnxTensor.UINT32: (np.dtype(np.uint32), _C2.UINT32),
    OnnxTensor.UINT64: (np.dtype(np.uint64), _C2.UINT64),
    OnnxTensor.BFLOAT16: (BFLOAT16, _C2.BFLOAT16),
    OnnxTensor.BOOL: (np.dtype(np.bool_), _C2.BOOL),
    OnnxTensor.STRING: (np.dtype(object), _C2.STRING),
}
_BY_NUMPY = {numpy_dtype: (onnx_type, c2_type)
             for onnx_type, (numpy_dtype, c2_type) in _TYPES.items()}


def onnx_type_name(onnx_type):
    try:
        return OnnxTensor.DataType.Name(onnx_type)
    except ValueError:
        return 'unknown type {}'.format(onnx_type)


def numpy_dtype(onnx_type, what):
    """The numpy dtype of an ONNX element type; `what` names the value for the
    error when Doppio has no such type."""
    if onnx_type not in _TYPES:
        raise UnsupportedError('{}: element type {} is not supported by doppio'.format(
            what, onnx_type_name(onnx_type)))
    return _TYPES[onnx_type][0]


def doppio_type(onnx_type, what):
    """The Doppio (Caffe2) TensorProto.DataType of an ONNX element type."""
    numpy_dtype(onnx_type, what)
    return _TYPES[onnx_type][1]


def doppio_type_of_numpy(dtype, what):
    dtype = np.dtype(dtype)
    if dtype not in _BY_NUMPY:
        raise UnsupportedError('{}: numpy dtype {} is not supported by doppio'.format(
            what, dtype))
    return _BY_NUMPY[dtype][1]


def to_array(tensor, what):
    """An ONNX TensorProto as a numpy array, checked: a known element type,
    data that matches the dims, no external data (its path would come from the
    model, which we do not trust with the file system)."""
    if tensor.data_location == OnnxTensor.EXTERNAL or len(tensor.external_data):
        raise UnsupportedError(
            '{}: tensors with external data are not supported; load the model with '
            'onnx.load (which reads external data) before converting it'.format(what))
    if tensor.HasField('segment'):
        raise UnsupportedError('{}: segmented tensors are not supported'.format(what))
    dtype = numpy_dtype(tensor.data_type, what)
    if dtype == BFLOAT16:
        raise UnsupportedError('{}: bfloat16 initializers and constants are not supported '
                               'yet'.format(what))
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise InvalidModelError('{}: negative dims {}'.format(what, dims))
    count = 1
    for d in dims:
        count *= d
    try:
        if tensor.data_type == OnnxTensor.STRING:
            values = [s for s in tensor.string_data]
            array = np.empty(len(values), dtype=object)
            array[:] = values
        elif tensor.HasField('raw_data'):
            if len(tensor.raw_data) != count * dtype.itemsize:
                raise InvalidModelError(
                    '{}: raw_data holds {} bytes but dims {} of {} need {}'.format(
                        what, len(tensor.raw_data), dims, onnx_type_name(tensor.data_type),
                        count * dtype.itemsize))
            array = np.frombuffer(tensor.raw_data, dtype=dtype.newbyteorder('<')).astype(dtype)
        else:
            array = _typed_field_array(tensor, dtype)
        if array.size != count:
            raise InvalidModelError('{}: holds {} elements but dims {} need {}'.format(
                what, array.size, dims, count))
        return array.reshape(dims)
    except (ValueError, TypeError, OverflowError) as error:
        raise InvalidModelError('{}: malformed tensor data ({})'.format(what, error)) from None


def _typed_field_array(tensor, dtype):
    """Values stored in the typed fields (ONNX's storage rules: small ints,
    bools and float16 bits in int32_data)."""
    kind = tensor.data_type
    if kind == OnnxTensor.FLOAT:
        return np.asarray(tensor.float_data, dtype=np.float32)
    if kind == OnnxTensor.DOUBLE:
        return np.asarray(tensor.double_data, dtype=np.float64)
    if kind == OnnxTensor.INT64:
        return np.asarray(tensor.int64_data, dtype=np.int64)
    if kind == OnnxTensor.FLOAT16:
        bits = np.asarray(tensor.int32_data, dtype=np.int64)
        if bits.size and (bits.min() < 0 or bits.max() > 0xFFFF):
            raise ValueError('float16 bits out of the 16-bit range')
        return bits.astype(np.uint16).view(np.float16)
    values = np.asarray(tensor.int32_data, dtype=np.int64)
    if kind == OnnxTensor.BOOL:
        return values != 0
    info = np.iinfo(dtype)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise ValueError('values out of the range of {}'.format(dtype))
    return values.astype(dtype)


def fill_op(array, output, name=''):
    """The GivenTensor*Fill OperatorDef that recreates `array` in blob
    `output`: Caffe2's fill op for the type (GivenTensorFill,
    GivenTensorDoubleFill, GivenTensorIntFill, GivenTensorInt64Fill,
    GivenTensorBoolFill, GivenTensorStringFill), or GivenTensorFill with a
    `dtype` argument for float16 and the small integer types."""
    array = np.asarray(array)
    c2_type = doppio_type_of_numpy(array.dtype, 'constant {!r}'.format(output))
    op = doppio_pb2.OperatorDef(type='GivenTensorFill', output=[output], name=name)
    shape = op.arg.add(name='shape')
    shape.ints.extend(int(d) for d in array.shape)
    values = op.arg.add(name='values')
    flat = array.reshape(-1)
    if c2_type == _C2.FLOAT:
        values.floats.extend(flat.tolist())
    elif c2_type == _C2.DOUBLE:
        op.type = 'GivenTensorDoubleFill'
        values.floats.extend(flat.tolist())
    elif c2_type == _C2.INT32:
        op.type = 'GivenTensorIntFill'
        values.ints.extend(flat.tolist())
    elif c2_type == _C2.INT64:
        op.type = 'GivenTensorInt64Fill'
        values.ints.extend(flat.tolist())
    elif c2_type == _C2.BOOL:
        op.type = 'GivenTensorBoolFill'
        values.ints.extend(int(v) for v in flat.tolist())
    elif c2_type == _C2.STRING:
        op.type = 'GivenTensorStringFill'
        values.strings.extend(v if isinstance(v, bytes) else str(v).encode('utf-8')
                              for v in flat.tolist())
    else:
        op.arg.add(name='dtype', i=c2_type)
        if array.dtype == np.float16:
            values.floats.extend(flat.astype(np.float32).tolist())
        else:
            values.ints.extend(int(v) for v in flat.tolist())
    return op
