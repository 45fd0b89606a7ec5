"""caffe2.python.scope is doppio.scope itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.scope')
