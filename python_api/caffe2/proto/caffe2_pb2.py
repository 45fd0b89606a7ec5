"""caffe2.proto.caffe2_pb2 is doppio.proto.caffe2_pb2 itself, whose classes
are doppio_pb2's: a NetDef built under either name is the same message type
(see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.proto.caffe2_pb2')
