"""caffe2.python.predictor.mobile_exporter is doppio's (see caffe2/__init__.py)."""
from caffe2 import _alias

_alias(__name__, 'doppio.predictor.mobile_exporter')
