"""Doppio's protobuf messages (wire-compatible with Caffe2's caffe2.proto)."""
