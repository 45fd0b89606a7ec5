"""caffe2.python.workspace is doppio.workspace itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.workspace')
