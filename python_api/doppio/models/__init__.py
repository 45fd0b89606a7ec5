"""caffe2.python.models: reference model builders written with brew."""
