"""A model as a pair of nets, as in caffe2.python.model_helper: the
param_init_net that creates the parameters once, the net that trains or
predicts with them, and the bookkeeping (which blobs are parameters, which
are computed statistics, which gradient belongs to which parameter) that
brew helpers and optimizers rely on."""

from doppio import core
from doppio import scope
# Caffe2 scripts import these from model_helper as well as from modeling.
from doppio.modeling.initializers import (  # noqa: F401
    ExternalInitializer, Initializer, update_initializer)
from doppio.modeling.parameter_info import ParameterInfo, ParameterTags  # noqa: F401
from doppio.modeling.parameter_sharing import parameter_sharing_context
from doppio.optimizer_context import DEFAULT_OPTIM, OptimizerContext


class ParameterShapeError(ValueError, AssertionError):
    """A parameter asked for again with another shape. A ValueError, and an
    AssertionError as Caffe2's create_param raised."""


def _attach_context_optimizer(param_info, tags):
    """Gives a new parameter the optimizer of the enclosing UseOptimizer
    block: its first tag's, else the block's default."""
    context = OptimizerContext.current()
    for tag in tags:
        if context.has_optimizer(tag):
            param_info.optimizer = context.get_optimizer(tag)
            return
    if context.has_optimizer(DEFAULT_OPTIM):
        param_info.optimizer = context.get_optimizer(DEFAULT_OPTIM)


class ModelHelper(object):
    """Two nets and the parameters shared between them.

    `arg_scope` overrides the defaults every brew helper receives (order
    NCHW, use_cudnn, cudnn_exhaustive_search); with init_params=False the
    helpers add nothing to param_init_net."""

    def __init__(self, name=None, init_params=True, allow_not_known_ops=True,
                 skip_sparse_optim=False, param_model=None, arg_scope=None):
        self.name = name or 'model'
        self.net = core.Net(self.name)
        if param_model is not None:
            # Share parameters (and their bookkeeping) with another model.
            self.param_init_net = param_model.param_init_net
            self.param_to_grad = param_model.param_to_grad
            self.params = param_model.params
            self._parameters_info = param_model._parameters_info
            self._computed_params = param_model._computed_params
        else:
            self.param_init_net = core.Net(self.name + '_init')
            self.param_to_grad = {}
            self.params = []
            self._parameters_info = {}
            self._computed_params = []
        self._param_info_deprecated = []
        self._devices = []
        self.gradient_ops_added = False
        self.init_params = init_params
        self.allow_not_known_ops = allow_not_known_ops
        self.skip_sparse_optim = skip_sparse_optim
        self.weights = []
        self.biases = []
        self._arg_scope = {
            'order': 'NCHW',
            'use_cudnn': True,
            'cudnn_exhaustive_search': False,
        }
        if arg_scope is not None:
            self._arg_scope.update(arg_scope)
        self.grad_map = {}

    @property
    def arg_scope(self):
        return self._arg_scope

    # ---- parameters ----

    @staticmethod
    def _normalize_tags(tags):
        if tags is None:
            return set()
        if isinstance(tags, (list, tuple, set)):
            return set(tags)
        return {tags}

    def create_param(self, param_name, shape, initializer, tags=None):
        """The parameter `param_name` (scoped by the current name scope when
        a str), created with `initializer` in param_init_net unless it
        exists already, in which case its shape must agree."""
        if isinstance(param_name, core.BlobReference):
            param_name = str(param_name)
        elif isinstance(param_name, str):
            # The current name scope, after ParameterSharing's overrides.
            param_name = parameter_sharing_context.get_parameter_name(param_name)
        else:
            raise TypeError('Unsupported type for param_name: {}'.format(
                type(param_name).__name__))
        if param_name in self._parameters_info:
            existing = self._parameters_info[param_name]
            if list(existing.shape or []) != list(shape):
                raise ParameterShapeError('parameter {} exists with shape {}, asked for {}'.format(
                    param_name, existing.shape, list(shape)))
            return existing.blob
        param_info = initializer.create_param(
            param_name=core.BlobReference(param_name),
            init_net=self.param_init_net, shape=shape)
        _attach_context_optimizer(param_info, self._normalize_tags(tags))
        self._parameters_info[param_name] = param_info
        self.AddParameter(param_info.blob, tags)
        return param_info.blob

    def get_param_info(self, param):
        if not isinstance(param, core.BlobReference):
            raise TypeError('Param {} is not a BlobReference'.format(param))
        return self._parameters_info.get(str(param), None)

    def add_param_DEPRECATED(self, param, key=None, shape=None, length=None):
        param_info = ParameterInfo(param_id=len(self._param_info_deprecated),
                                   param=param, shape=shape, key=key, length=length)
        self._param_info_deprecated.append(param_info)
        return param_info

    def AddParameter(self, param, tags=None):
        """Records `param` as trained (or as computed with COMPUTED_PARAM)."""
        if not isinstance(param, core.BlobReference):
            raise TypeError('AddParameter needs a BlobReference, got {}'.format(
                type(param).__name__))
        tags = self._normalize_tags(tags)
        if ParameterTags.COMPUTED_PARAM in tags:
            self._computed_params.append(param)
        else:
            self.params.append(param)
        if ParameterTags.WEIGHT in tags:
            self.weights.append(param)
        if ParameterTags.BIAS in tags:
            self.biases.append(param)

    def GetParams(self, namescope=None, top_scope=False):
        """Trained parameters under `namescope` (default: the current one)."""
        return self._FilterByNameScope(self.params, namescope)

    def GetComputedParams(self, namescope=None):
        """Computed parameters (e.g. running statistics) under `namescope`."""
        return self._FilterByNameScope(self._computed_params, namescope)

    def GetAllParams(self, namescope=None):
        return self.GetParams(namescope) + self.GetComputedParams(namescope)

    @staticmethod
    def _FilterByNameScope(blobs, namescope):
        # None: the current scope; '' (explicitly): every blob, as Caffe2.
        if namescope is None:
            namescope = scope.CurrentNameScope()
        elif namescope and not namescope.endswith(scope._NAMESCOPE_SEPARATOR):
            namescope += scope._NAMESCOPE_SEPARATOR
        if namescope == '':
            return blobs[:]
        return [p for p in blobs if p.GetNameScope().startswith(namescope)]

    def GetWeights(self, namescope=None):
        return self._FilterByNameScope(self.weights, namescope)

    def GetBiases(self, namescope=None):
        return self._FilterByNameScope(self.biases, namescope)

    def _Validate(self):
        """The parameter names recorded more than once."""
        names = sorted(str(p) for p in self.params)
        return sorted(set(a for a, b in zip(names, names[1:]) if a == b))

    def Validate(self):
        dupes = self._Validate()
        if dupes:
            raise RuntimeError('model {}: duplicate params: {}'.format(self.name, dupes))

    # ---- gradients ----

    def AddGradientOperators(self, *args, **kwargs):
        """Appends the backward pass for the given losses to `net` and
        returns the blob -> gradient map; param_to_grad keeps the part of
        it that belongs to the parameters."""
        if self.gradient_ops_added:
            raise RuntimeError('You cannot run AddGradientOperators twice.')
        self.Validate()
        self.gradient_ops_added = True
        self.grad_map = self.net.AddGradientOperators(*args, **kwargs)
        self.param_to_grad = self.get_param_to_grad(self.params)
        for param, grad in self.param_to_grad.items():
            param_info = self.get_param_info(param)
            if param_info is not None:
                param_info.grad = grad
            else:
                self._parameters_info[str(param)] = ParameterInfo(
                    param_id=None, param=param, grad=grad)
        return self.grad_map

    def get_param_to_grad(self, params):
        if not self.gradient_ops_added:
            raise RuntimeError('You need to run AddGradientOperators first.')
        return {p: self.grad_map[str(p)] for p in params if str(p) in self.grad_map}

    def GetOptimizationParamInfo(self, params=None):
        """ParameterInfo of each parameter that has a gradient (only those
        with dense gradients when skip_sparse_optim)."""
        params = self.GetParams() if params is None else params
        infos = []
        for param in params:
            if param not in self.param_to_grad:
                continue
            grad = self.param_to_grad[param]
            if self.skip_sparse_optim and isinstance(grad, core.GradientSlice):
                continue
            info = self.get_param_info(param)
            if info is None:
                info = ParameterInfo(param_id=None, param=param, grad=grad)
                self._parameters_info[str(param)] = info
            infos.append(info)
        return infos

    # ---- nets ----

    def Proto(self):
        return self.net.Proto()

    def InitProto(self):
        return self.param_init_net.Proto()

    def TensorProtosDBInput(self, unused_blob_in, blob_out, batch_size, db,
                            db_type, **kwargs):
        """A DB reader made once in param_init_net and a TensorProtosDBInput
        in net that reads `batch_size` records per run into `blob_out`."""
        if unused_blob_in:
            raise ValueError('model_helper.TensorProtosDBInput takes no reader input; '
                             'use model.net.TensorProtosDBInput to pass one')
        reader = self.param_init_net.CreateDB(
            [], 'dbreader_' + db, db=db, db_type=db_type)
        return self.net.TensorProtosDBInput(reader, blob_out, batch_size=batch_size,
                                            **kwargs)

    def CreateDB(self, blob_out, db, db_type, **kwargs):
        """A DB reader made once, by param_init_net (as in Caffe2)."""
        return self.param_init_net.CreateDB([], blob_out, db=db, db_type=db_type, **kwargs)

    def __getattr__(self, op_type):
        """Other operators (those without parameters) go to `net`."""
        if op_type.startswith('_'):
            raise AttributeError(op_type)
        if not core.IsOperator(op_type):
            raise AttributeError('Method ' + op_type + ' is not a registered operator.')
        return getattr(self.net, op_type)

    def __dir__(self):
        return sorted(set(list(self.__dict__) + dir(type(self))))


def _predictor_step_net(op, device, renames):
    """A RecurrentNetwork for serving: no backward step net, its step net's
    ops on `device` with `renames` applied. Returns the step net's external
    inputs (after renaming)."""
    step_inputs = []
    for arg in op.arg:
        if arg.name == 'backward_step_net':
            arg.ClearField('n')
        elif arg.name == 'step_net':
            for step_op in arg.n.op:
                step_op.input[:] = [renames.get(b, b) for b in step_op.input]
                step_op.output[:] = [renames.get(b, b) for b in step_op.output]
                if device is not None:
                    step_op.device_option.CopyFrom(device)
            arg.n.external_input[:] = [renames.get(b, b) for b in arg.n.external_input]
            arg.n.external_output[:] = [renames.get(b, b) for b in arg.n.external_output]
            step_inputs = list(arg.n.external_input)
    return step_inputs


def ExtractPredictorNet(net_proto, input_blobs, output_blobs, device=None,
                        renames=None, disabled_inputs=None):
    """Caffe2's ExtractPredictorNet: the ops of a (test-mode) net between
    the first op reading `input_blobs` and the last op writing
    `output_blobs`, keeping only ops whose inputs are known (inputs, params,
    earlier outputs), so readers, losses and gradient ops fall away.

    Returns (predict_net, the blobs to export with it: its external inputs
    other than input_blobs, i.e. the parameters, after renames). `device` overrides each op's
    device option; `renames` maps blob names in the result; an op with
    is_test=0 is refused, since a train-mode op (SpatialBN, Dropout) in a
    serving net silently changes its answers."""
    if isinstance(net_proto, core.Net):
        net_proto = net_proto.Proto()
    predict_net = core.Net(net_proto.name + '_predict')
    predict_proto = predict_net.Proto()
    renames = renames or {}
    original_inputs = set(net_proto.external_input)
    original_outputs = set(net_proto.external_output)
    input_names = [str(b) for b in input_blobs]
    output_names = [str(b) for b in output_blobs]
    known = original_inputs.union(input_names) - set(disabled_inputs or [])
    ops = list(net_proto.op)
    readers = [i for i, op in enumerate(ops)
               if set(input_names).intersection(op.input) and op.type != 'StopGradient']
    writers = [i for i, op in enumerate(ops) if set(output_names).intersection(op.output)]
    if not readers:
        raise ValueError('ExtractPredictorNet: no op of net {!r} reads {}'.format(
            net_proto.name, input_names))
    if not writers:
        raise ValueError('ExtractPredictorNet: no op of net {!r} writes {}'.format(
            net_proto.name, output_names))

    external_inputs = list(input_names)
    external_outputs = list(output_names)
    for op in ops[min(readers):max(writers) + 1]:
        if not known.issuperset(op.input):
            continue
        for arg in op.arg:
            if arg.name == 'is_test' and arg.i == 0:
                raise ValueError(
                    'ExtractPredictorNet: op {} ({}) has is_test=0; extract from a '
                    'test-mode model (is_test=1), not the training one'.format(
                        op.name or len(predict_proto.op), op.type))
        new_op = predict_proto.op.add()
        new_op.CopyFrom(op)
        if device is not None:
            new_op.device_option.CopyFrom(device)
        if op.type == 'RecurrentNetwork':
            external_inputs += [b for b in _predictor_step_net(new_op, device, renames)
                                if b in original_inputs and b not in external_inputs]
        known.update(op.output)
        external_inputs += [b for b in op.input
                            if b in original_inputs and b not in external_inputs]
        external_outputs += [b for b in op.output
                             if b in original_outputs and b not in external_outputs]

    def renamed(names):
        return [renames.get(name, name) for name in names]

    for op in predict_proto.op:
        op.input[:] = renamed(op.input)
        op.output[:] = renamed(op.output)
    predict_proto.external_input.extend(renamed(external_inputs))
    predict_proto.external_output.extend(renamed(external_outputs))
    inputs = set(renamed(input_names))
    return predict_net, [b for b in renamed(external_inputs) if b not in inputs]
