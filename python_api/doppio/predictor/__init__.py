"""Exporting trained models for serving (Caffe2's caffe2.python.predictor)."""
