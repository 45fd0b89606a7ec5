"""Pooling (caffe2.python.helpers.pooling; brew registers them)."""

from doppio.helpers._common import _with_cudnn


def max_pool(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.MaxPool(blob_in, blob_out, order=order,
                             **_with_cudnn(use_cudnn, kwargs))


def average_pool(model, blob_in, blob_out, use_cudnn=False, order='NCHW', **kwargs):
    return model.net.AveragePool(blob_in, blob_out, order=order,
                                 **_with_cudnn(use_cudnn, kwargs))
