"""CNNModelHelper, Caffe2's deprecated model class, kept so old scripts
(`model = cnn.CNNModelHelper(order='NCHW'); model.Conv(...)`) run unchanged.

It is a ModelHelper whose arg_scope carries the constructor's order and
cuDNN settings, plus one method per layer that forwards to the brew helper
of the same layer; new code should call brew on a ModelHelper directly.
"""

import logging

from doppio import brew
from doppio import optimizer
from doppio.model_helper import ModelHelper
from doppio.proto import doppio_pb2 as caffe2_pb2


class CNNModelHelper(ModelHelper):
    """ModelHelper with layer methods (Conv, FC, MaxPool, ...)."""

    def __init__(self, order='NCHW', name=None, use_cudnn=True,
                 cudnn_exhaustive_search=False, ws_nbytes_limit=None, init_params=True,
                 skip_sparse_optim=False, param_model=None):
        logging.warning('[====DEPRECATE WARNING====]: you are creating an object from '
                        'CNNModelHelper class which will be deprecated soon. Please use '
                        'ModelHelper object with brew module.')
        if order not in ('NCHW', 'NHWC'):
            raise ValueError('Cannot understand the CNN storage order {}.'.format(order))
        cnn_arg_scope = {
            'order': order,
            'use_cudnn': use_cudnn,
            'cudnn_exhaustive_search': cudnn_exhaustive_search,
        }
        if ws_nbytes_limit:
            cnn_arg_scope['ws_nbytes_limit'] = ws_nbytes_limit
        super(CNNModelHelper, self).__init__(
            skip_sparse_optim=skip_sparse_optim, name='CNN' if name is None else name,
            init_params=init_params, param_model=param_model, arg_scope=cnn_arg_scope)
        self.order = order
        self.use_cudnn = use_cudnn
        self.cudnn_exhaustive_search = cudnn_exhaustive_search
        self.ws_nbytes_limit = ws_nbytes_limit

    # ---- layers with parameters ----

    def _conv_kwargs(self, kwargs):
        merged = dict(use_cudnn=self.use_cudnn, order=self.order,
                      cudnn_exhaustive_search=self.cudnn_exhaustive_search,
                      ws_nbytes_limit=self.ws_nbytes_limit)
        merged.update(kwargs)
        return merged

    def Conv(self, *args, **kwargs):
        return brew.conv(self, *args, **self._conv_kwargs(kwargs))

    def GroupConv(self, blob_in, blob_out, dim_in, dim_out, kernel, weight_init=None,
                  bias_init=None, group=1, **kwargs):
        return brew.conv(self, blob_in, blob_out, dim_in, dim_out, kernel,
                         weight_init=weight_init, bias_init=bias_init, group=group,
                         **self._conv_kwargs(kwargs))

    def FC(self, *args, **kwargs):
        return brew.fc(self, *args, **kwargs)

    def SpatialBN(self, *args, **kwargs):
        return brew.spatial_bn(self, *args, order=self.order, **kwargs)

    # ---- layers without parameters ----

    def Relu(self, *args, **kwargs):
        return brew.relu(self, *args, order=self.order, use_cudnn=self.use_cudnn, **kwargs)

    def Softmax(self, *args, **kwargs):
        return brew.softmax(self, *args, use_cudnn=self.use_cudnn, **kwargs)

    def Dropout(self, *args, **kwargs):
        return brew.dropout(self, *args, use_cudnn=self.use_cudnn, **kwargs)

    def MaxPool(self, *args, **kwargs):
        return brew.max_pool(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                             **kwargs)

    def AveragePool(self, *args, **kwargs):
        return brew.average_pool(self, *args, use_cudnn=self.use_cudnn, order=self.order,
                                 **kwargs)

    def Concat(self, *args, **kwargs):
        return brew.concat(self, *args, order=self.order, **kwargs)

    def DepthConcat(self, *args, **kwargs):
        logging.warning('DepthConcat is deprecated. use Concat instead.')
        return self.Concat(*args, **kwargs)

    def Sum(self, *args, **kwargs):
        return brew.sum(self, *args, **kwargs)

    # brew has no helper for these yet; each builds what Caffe2's brew.<layer>
    # builds (the extra outputs named as there).

    def LRN(self, blob_in, blob_out, **kwargs):
        if self.use_cudnn:
            kwargs.setdefault('engine', 'CUDNN')
        kwargs.setdefault('order', self.order)
        return self.net.LRN(blob_in, [blob_out, '_' + blob_out + '_scale'], **kwargs)[0]

    def Transpose(self, blob_in, blob_out, **kwargs):
        if self.use_cudnn:
            kwargs.setdefault('engine', 'CUDNN')
        return self.net.Transpose(blob_in, blob_out, **kwargs)

    def Accuracy(self, blob_in, blob_out, **kwargs):
        return self.net.Accuracy(blob_in, blob_out, **kwargs)

    def Iter(self, blob_out, **kwargs):
        if 'device_option' in kwargs:
            del kwargs['device_option']
        self.param_init_net.ConstantFill([], blob_out, shape=[1], value=0,
                                         dtype=caffe2_pb2.TensorProto.INT64,
                                         device_option=self.CPU, **kwargs)
        return self.net.Iter(blob_out, blob_out, **kwargs)

    # ---- initializers and devices, under Caffe2's names ----

    @property
    def XavierInit(self):
        return ('XavierFill', {})

    def ConstantInit(self, value):
        return ('ConstantFill', dict(value=value))

    @property
    def MSRAInit(self):
        return ('MSRAFill', {})

    @property
    def ZeroInit(self):
        return ('ConstantFill', {})

    def AddWeightDecay(self, weight_decay):
        return optimizer.add_weight_decay(self, weight_decay)

    @property
    def CPU(self):
        device_option = caffe2_pb2.DeviceOption()
        device_option.device_type = caffe2_pb2.CPU
        return device_option

    @property
    def GPU(self, gpu_id=0):
        device_option = caffe2_pb2.DeviceOption()
        device_option.device_type = caffe2_pb2.CUDA
        device_option.cuda_gpu_id = gpu_id
        return device_option
