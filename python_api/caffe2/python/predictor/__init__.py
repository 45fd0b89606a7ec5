"""caffe2.python.predictor: its modules are doppio.predictor's."""
