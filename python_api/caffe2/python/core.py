"""caffe2.python.core is doppio.core itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.core')
