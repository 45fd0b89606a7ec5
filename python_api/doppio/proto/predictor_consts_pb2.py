"""Caffe2's predictor_consts_pb2: PredictorConsts, whose field defaults are
the names a predictor export uses."""

from doppio.proto.doppio_pb2 import PredictorConsts  # noqa: F401
