"""caffe2.python.utils: proto and numpy conversions, argument building and the
debugging helpers Caffe2 scripts import (char_rnn.py decorates its main with
utils.debug)."""
import copy
import functools
import sys
import traceback

import numpy as np
from google.protobuf import text_format
from google.protobuf.message import DecodeError

from doppio import core_net, workspace
from doppio.proto import caffe2_pb2

# Caffe2 has it here too.
MakeArgument = core_net.MakeArgument


def OpAlmostEqual(op_a, op_b, ignore_fields=None):
    """Whether two OperatorDefs are equal once `ignore_fields` (a field name or
    a list of them) are cleared in both."""
    ignore_fields = ignore_fields or []
    if not isinstance(ignore_fields, list):
        ignore_fields = [ignore_fields]

    def clean(op):
        op = copy.deepcopy(op)
        for field in ignore_fields:
            if op.HasField(field):
                op.ClearField(field)
        return op

    return clean(op_a) == clean(op_b)


def CaffeBlobToNumpyArray(blob):
    """A Caffe (1) BlobProto as float32: old-style num/channels/height/width,
    or shape.dim."""
    data = np.asarray(blob.data, dtype=np.float32)
    if blob.num != 0:
        return data.reshape(blob.num, blob.channels, blob.height, blob.width)
    return data.reshape(blob.shape.dim)


def Caffe2TensorToNumpyArray(tensor):
    """A TensorProto's values as a numpy array of its dims (INT32 comes back as
    int64, as Caffe2's np.int did)."""
    try:
        array = workspace._TensorProtoToArray(tensor)
    except TypeError as e:
        raise RuntimeError('Tensor data type not supported yet: {} ({})'.format(
            tensor.data_type, e))
    if tensor.data_type == caffe2_pb2.TensorProto.INT32:
        array = array.astype(np.int64)
    return array


# The repeated field of a TensorProto holding each numeric type's values.
_VALUE_FIELDS = {
    caffe2_pb2.TensorProto.FLOAT: 'float_data',
    caffe2_pb2.TensorProto.DOUBLE: 'double_data',
    caffe2_pb2.TensorProto.INT64: 'int64_data',
    caffe2_pb2.TensorProto.UINT32: 'int64_data',
    caffe2_pb2.TensorProto.UINT64: 'int64_data',
}


def NumpyArrayToCaffe2Tensor(arr, name=None):
    """A numpy array as a TensorProto (numeric dtypes and bool)."""
    arr = np.asarray(arr)
    data_type = workspace._PROTO_TYPES.get(arr.dtype)
    if data_type is None or data_type == caffe2_pb2.TensorProto.FLOAT16:
        raise RuntimeError('Numpy data type not supported yet: ' + str(arr.dtype))
    tensor = caffe2_pb2.TensorProto()
    tensor.dims.extend(arr.shape)
    if name:
        tensor.name = name
    tensor.data_type = data_type
    field = _VALUE_FIELDS.get(data_type, 'int32_data')
    values = arr.flatten()
    if field == 'int32_data':
        values = values.astype(np.int32)
    elif arr.dtype == np.uint64:
        values = values.view(np.int64)  # its two's-complement bits, as Doppio stores them
    getattr(tensor, field).extend(values.tolist())
    return tensor


def ArgsToDict(args):
    """Caffe2's: OperatorDef arguments as {name: value}, each value the one
    field the argument sets (f, i, s as bytes, n, or the first non-empty
    repeated field as a list); None for an argument that sets none."""
    values = {}
    for arg in args:
        if not arg.name:
            continue
        values[arg.name] = None
        for field in arg.DESCRIPTOR.fields:
            if field.name == 'name':
                continue
            if field.label == field.LABEL_REPEATED:
                if len(getattr(arg, field.name)):
                    values[arg.name] = list(getattr(arg, field.name))
                    break
            elif arg.HasField(field.name):
                values[arg.name] = getattr(arg, field.name)
                break
    return values


def TryReadProtoWithClass(cls, s):
    """A `cls` message from text or binary protobuf content; DecodeError when
    it is neither."""
    obj = cls()
    try:
        text_format.Parse(s if isinstance(s, str) else s.decode('utf-8'), obj)
        return obj
    except (text_format.ParseError, UnicodeDecodeError):
        obj.ParseFromString(s if isinstance(s, bytes) else s.encode('utf-8'))
        return obj


def GetContentFromProto(obj, function_map):
    """function_map[type(obj)](obj), for the first class that matches."""
    for cls, func in function_map.items():
        if type(obj) is cls:
            return func(obj)
    return None


def GetContentFromProtoString(s, function_map):
    """func(message) for the first class in function_map that parses s."""
    for cls, func in function_map.items():
        try:
            return func(TryReadProtoWithClass(cls, s))
        except DecodeError:
            continue
    raise DecodeError('Cannot find a fit protobuffer class.')


def ConvertProtoToBinary(proto_class, filename, out_filename):
    """Converts a text-format `proto_class` file to binary."""
    with open(filename, 'rb') as f:
        proto = TryReadProtoWithClass(proto_class, f.read())
    with open(out_filename, 'wb') as f:
        f.write(proto.SerializeToString())


def GetGPUMemoryUsageStats():
    """Caffe2 read these from its GetGPUMemoryUsage op (with
    --caffe2_gpu_memory_tracking); Doppio does not expose its CUDA
    allocator's counts to Python yet (GetCPUAllocatorStats has the host's)."""
    raise RuntimeError('GetGPUMemoryUsageStats: per-GPU memory statistics are not available '
                       'in Doppio; workspace.GetCPUAllocatorStats() reports host memory')


def ResetBlobs(blobs):
    """Frees the tensors of `blobs` (they stay, empty)."""
    from doppio import core, workspace
    workspace.RunOperatorOnce(core.CreateOperator(
        'Free', list(blobs), list(blobs), device_option=core.DeviceOption(caffe2_pb2.CPU)))


class DebugMode(object):
    """Runs a function; an unhandled exception drops into the post-mortem
    debugger when stdin is a terminal (as Caffe2's), and otherwise prints its
    traceback and exits with status 1 (a debugger on a pipe would only read
    end-of-file)."""

    @classmethod
    def run(cls, func):
        try:
            return func()
        except KeyboardInterrupt:
            raise
        except Exception:
            if sys.stdin is not None and sys.stdin.isatty():
                import pdb
                print('Entering interactive debugger. Type "bt" to print the full stacktrace. '
                      'Type "help" to see command listing.')
                print(sys.exc_info()[1])
                pdb.post_mortem()
            else:
                traceback.print_exc()
            sys.exit(1)


def raiseIfNotEqual(a, b, msg):
    if a != b:
        raise Exception('{}. {} != {}'.format(msg, a, b))


def debug(f):
    """Decorates f with DebugMode.run."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return DebugMode.run(lambda: f(*args, **kwargs))
    return wrapper
