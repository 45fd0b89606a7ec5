"""caffe2.python.utils: numpy <-> TensorProto round trips (with Caffe2's
INT32 -> int64 on the way back), reading text or binary protos, OpAlmostEqual,
and DebugMode's exit on a non-terminal."""
import subprocess
import sys

import numpy as np
import pytest
from google.protobuf.message import DecodeError

from doppio import core, utils
from doppio.proto import doppio_pb2 as caffe2_pb2


@pytest.mark.parametrize('dtype', [np.float32, np.float64, np.int32, np.int64, np.int16,
                                   np.uint16, np.uint32, np.uint64, np.int8, np.uint8,
                                   np.bool_])
def test_numpy_tensor_round_trip(dtype):
    arr = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    proto = utils.NumpyArrayToCaffe2Tensor(arr, 'x')
    assert proto.name == 'x' and list(proto.dims) == [2, 3]
    back = utils.Caffe2TensorToNumpyArray(proto)
    np.testing.assert_array_equal(back, arr)
    assert back.dtype == (np.int64 if dtype == np.int32 else dtype)


def test_unsupported_types_are_errors():
    with pytest.raises(RuntimeError, match='not supported'):
        utils.NumpyArrayToCaffe2Tensor(np.zeros(2, np.complex64))
    with pytest.raises(RuntimeError, match='not supported'):
        utils.Caffe2TensorToNumpyArray(caffe2_pb2.TensorProto(data_type=caffe2_pb2.TensorProto.BYTE))


def test_read_proto_text_or_binary_and_op_almost_equal():
    op = core.CreateOperator('Relu', ['x'], ['y'], name='a')
    for data in (op.SerializeToString(), str(op)):
        assert utils.TryReadProtoWithClass(caffe2_pb2.OperatorDef, data) == op
    with pytest.raises(DecodeError):
        utils.GetContentFromProtoString(b'\xff\xff not a proto', {caffe2_pb2.NetDef: str})
    other = core.CreateOperator('Relu', ['x'], ['y'], name='b')
    assert not utils.OpAlmostEqual(op, other)
    assert utils.OpAlmostEqual(op, other, 'name')


def test_debug_mode_exits_with_the_traceback_off_a_terminal():
    script = ('from doppio import utils\n'
              '@utils.debug\n'
              'def main():\n'
              '    raise ValueError("boom 17")\n'
              'main()\n')
    result = subprocess.run([sys.executable, '-c', script], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert 'boom 17' in result.stderr



def test_args_to_dict_reads_each_argument_kind():
    op = core.CreateOperator('X', [], [], f=0.5, i=3, s='text', ints=[1, 2], floats=[0.25],
                             strings=['a', 'b'], n=caffe2_pb2.NetDef(name='sub'))
    op.arg.add(name='unset')
    args = utils.ArgsToDict(op.arg)
    assert args['f'] == 0.5 and args['i'] == 3 and args['s'] == b'text'
    assert args['ints'] == [1, 2] and args['floats'] == [0.25]
    assert args['strings'] == [b'a', b'b'] and args['n'].name == 'sub'
    assert args['unset'] is None


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q']))
