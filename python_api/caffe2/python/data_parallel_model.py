"""caffe2.python.data_parallel_model is doppio.data_parallel_model itself (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.data_parallel_model')
