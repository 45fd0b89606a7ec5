"""caffe2.python.optimizer is doppio.optimizer itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.optimizer')
