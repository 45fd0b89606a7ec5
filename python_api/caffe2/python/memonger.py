"""caffe2.python.memonger is doppio.memonger itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.memonger')
