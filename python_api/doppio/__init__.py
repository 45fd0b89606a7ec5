"""Doppio: a Caffe2-compatible dataflow framework for training and serving."""
