"""Caffe2's predictor_constants: one PredictorConsts message whose field
defaults are the blob and map-entry names of a predictor export.

    from caffe2.python.predictor_constants import predictor_constants
    predictor_constants.PREDICT_NET_TYPE  # 'PREDICT_NET_TYPE'
"""
from doppio.proto import predictor_consts_pb2

predictor_constants = predictor_consts_pb2.PredictorConsts()
