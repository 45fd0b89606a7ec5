"""caffe2.proto: Caffe2's protobuf messages, which are Doppio's own."""
