"""caffe2.python.onnx.backend is doppio.onnx.backend itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.onnx.backend')
