"""caffe2.python.model_helper is doppio.model_helper itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.model_helper')
