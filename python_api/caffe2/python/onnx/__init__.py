"""caffe2.python.onnx: its modules are doppio.onnx's (see caffe2/__init__.py)."""
