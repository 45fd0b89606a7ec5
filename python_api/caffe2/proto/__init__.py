"""caffe2.proto: Caffe2's protobuf modules (caffe2_pb2, metanet_pb2,
predictor_consts_pb2), each the doppio.proto module of the same name."""
