"""caffe2.python.transformations is doppio.transformations itself (see
caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.transformations')
