"""caffe2.python.net_drawer is doppio.net_drawer itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.net_drawer')
