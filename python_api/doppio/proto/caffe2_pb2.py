"""caffe2_pb2 under its Caffe2 name: the same classes as doppio_pb2, so
scripts that import caffe2_pb2 build messages Doppio accepts as its own."""

from doppio.proto.doppio_pb2 import *  # noqa: F401,F403
from doppio.proto.doppio_pb2 import DESCRIPTOR  # noqa: F401
