"""caffe2.python.cnn is doppio.cnn itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.cnn')
