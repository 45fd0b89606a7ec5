"""caffe2.python.onnx.backend_rep is doppio.onnx.backend_rep itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.onnx.backend_rep')
