"""Caffe2's Seq2SeqModelHelper: a ModelHelper for sequence models, whose
parameters may be trainable or not, with Caffe2's defaults (cuDNN
preferred, NHWC)."""
from doppio import scope
from doppio.model_helper import ModelHelper


class Seq2SeqModelHelper(ModelHelper):
    def __init__(self, init_params=True, **kwargs):
        arg_scope = {
            'use_cudnn': kwargs.pop('use_cudnn', True),
            'cudnn_exhaustive_search': kwargs.pop('cudnn_exhaustive_search', False),
            'order': 'NHWC',
        }
        if kwargs.get('ws_nbytes_limit'):
            arg_scope['ws_nbytes_limit'] = kwargs.pop('ws_nbytes_limit')
        super(Seq2SeqModelHelper, self).__init__(init_params=init_params, arg_scope=arg_scope,
                                                 **kwargs)
        self.non_trainable_params = []

    def AddParam(self, name, init=None, init_value=None, trainable=True):
        """Adds parameter `name`, made by param_init_net with `init` (an
        (op type, kwargs) pair) or filled with the scalar init_value, or an
        external input of the net without init_params. Trainable parameters
        join model.params; the others non_trainable_params."""
        if init_value is not None:
            if init is not None:
                raise AssertionError('give init or init_value, not both')
            if type(init_value) not in (int, float, str):
                raise AssertionError('init_value must be an int, float or str, got {!r}'.format(
                    init_value))
            init = ('ConstantFill', dict(shape=[1], value=init_value))
        if self.init_params:
            if init is None:
                raise AssertionError('AddParam({!r}) needs init or init_value'.format(name))
            param = getattr(self.param_init_net, init[0])([], name, **init[1])
        else:
            param = self.net.AddExternalInput(name)
        (self.params if trainable else self.non_trainable_params).append(param)
        return param

    def GetNonTrainableParams(self, namescope=None):
        """The non-trainable parameters in `namescope` (default: the current
        one; '' means all)."""
        if namescope is None:
            namescope = scope.CurrentNameScope()
        elif not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
            namescope += scope._NAMESCOPE_SEPARATOR
        if namescope == '':
            return self.non_trainable_params[:]
        return [p for p in self.non_trainable_params if p.GetNameScope() == namescope]

    def GetAllParams(self, namescope=None):
        return (self.GetParams(namescope) + self.GetComputedParams(namescope) +
                self.GetNonTrainableParams(namescope))
