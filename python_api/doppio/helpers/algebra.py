"""Algebra: sums, transposes, batched matrix products: caffe2.python.helpers.algebra, whose helpers
brew registers."""

from doppio.helpers._common import _with_cudnn


def sum(model, blob_in, blob_out, **kwargs):
    return model.net.Sum(blob_in, blob_out, **kwargs)


def transpose(model, blob_in, blob_out, use_cudnn=False, **kwargs):
    return model.net.Transpose(blob_in, blob_out, **_with_cudnn(use_cudnn, kwargs))


def batch_mat_mul(model, blob_in, blob_out, enable_tensor_core=False, **kwargs):
    if enable_tensor_core:
        kwargs['engine'] = 'TENSORCORE'
    return model.net.BatchMatMul(blob_in, blob_out, **kwargs)
