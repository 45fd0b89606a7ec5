"""caffe2.python.onnx.frontend is doppio.onnx.frontend itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.onnx.frontend')
