"""caffe2.python.brew is doppio.brew itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.brew')
