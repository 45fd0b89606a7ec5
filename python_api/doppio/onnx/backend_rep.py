"""A prepared ONNX model: its Doppio nets in a workspace of their own."""

import itertools

import numpy as np
import onnx
from onnx.backend.base import BackendRep, namedtupledict

from doppio import transformations, workspace
from doppio.onnx import converter, tensors
from doppio.onnx.errors import InvalidInputError
from doppio.proto import doppio_pb2

_workspace_ids = itertools.count()
_CPU = doppio_pb2.DeviceOption(device_type=doppio_pb2.CPU)


class _InWorkspace:
    """Runs a `with` block in workspace `name`, then returns to the caller's
    workspace, so a prepared model never disturbs the user's blobs."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.previous = workspace.CurrentWorkspace()
        workspace.SwitchWorkspace(self.name, True)

    def __exit__(self, *exc):
        workspace.SwitchWorkspace(self.previous, True)
        return False


class DoppioRep(BackendRep):
    """What DoppioBackend.prepare returns; run(inputs) runs the model.

    `inputs` is a list or tuple (one array per graph input that is not an
    initializer, in graph order), a dict name -> array, or a single array.
    The outputs come back in the graph's output order as a namedtuple that
    can also be indexed by output name.

    Most models are converted once, by prepare. A model that needs the value
    of a graph input to be converted (say Squeeze's axes fed as an input) is
    converted on the first run, with the fed values, and again whenever those
    values change.
    """

    def __init__(self, model, converted, optimize=True):
        super().__init__()
        self._model = model
        self._optimize = optimize
        self._running_net = None  # the net run: predict_net, optimized
        self._static = converted
        self._current = converted
        self._ready_for = None
        self._workspace = 'onnx_backend_rep_{}'.format(next(_workspace_ids))
        initialized = {t.name for t in model.graph.initializer}
        graph_inputs = [v for v in model.graph.input if v.name not in initialized]
        self.uninitialized = [v.name for v in graph_inputs]
        self._declared_dtypes = {}
        for value in graph_inputs:
            elem_type = value.type.tensor_type.elem_type
            if elem_type:
                self._declared_dtypes[value.name] = tensors.numpy_dtype(
                    elem_type, 'graph input {!r}'.format(value.name))
        self.output_names = [v.name for v in model.graph.output]
        self._output_dtypes = [v.type.tensor_type.elem_type for v in model.graph.output]

    @property
    def init_net(self):
        """The init NetDef (None until the first run of a model converted at
        run time)."""
        return None if self._current is None else self._current.init_net

    @property
    def predict_net(self):
        return None if self._current is None else self._current.predict_net

    @property
    def running_net(self):
        """The NetDef run() runs: predict_net after the inference passes
        (unless prepared with optimize=False); None before the first run."""
        return self._running_net

    @property
    def workspace_name(self):
        return self._workspace

    def run(self, inputs, **kwargs):
        feeds = self._named_inputs(inputs)
        converted = self._conversion_for(feeds)
        with _InWorkspace(self._workspace):
            if self._ready_for is not converted:
                workspace.ResetWorkspace()
                workspace.RunNetOnce(converted.init_net)
            for name, value in feeds.items():
                if self._declared_dtypes.get(name) == tensors.BFLOAT16:
                    value = workspace.BFloat16Tensor(value)
                workspace.FeedBlob(name, value, device_option=_CPU)
            if self._ready_for is not converted:
                # Ops resolve their input blobs when the net is created, so
                # the inputs are fed first.
                self._running_net = self._net_to_run(converted)
                workspace.CreateNet(self._running_net, overwrite=True)
                self._ready_for = converted
            workspace.RunNet(self._running_net.name)
            outputs = [_onnx_value(workspace.FetchBlob(name), dtype)
                       for name, dtype in zip(converted.outputs, self._output_dtypes)]
        return namedtupledict('Outputs', self.output_names)(*outputs)

    def _net_to_run(self, converted):
        """The predict net, through the inference passes when optimizing.
        Conv+BN folding reads the weights, so the init net has run; the
        outputs are kept as the converted net computes them."""
        if not self._optimize:
            return converted.predict_net
        net = doppio_pb2.NetDef()
        net.CopyFrom(converted.predict_net)
        transformations.optimizeWhenServing(net, self._optimize, keep=converted.outputs)
        return net

    def close(self):
        """Frees the blobs of this model's workspace."""
        if self._ready_for is None:
            return
        self._ready_for = None
        with _InWorkspace(self._workspace):
            workspace.ResetWorkspace()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to free
            pass

    def _named_inputs(self, inputs):
        if isinstance(inputs, dict):
            named = dict(inputs)
            unknown = sorted(set(named) - set(self.uninitialized))
            if unknown:
                raise InvalidInputError('run: {} are not inputs of the model (its inputs are '
                                        '{})'.format(unknown, self.uninitialized))
        else:
            if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) > len(self.uninitialized):
                raise InvalidInputError('run: got {} inputs but the model takes {} ({})'.format(
                    len(inputs), len(self.uninitialized), self.uninitialized))
            named = dict(zip(self.uninitialized, inputs))
        missing = [name for name in self.uninitialized if name not in named]
        if missing:
            raise InvalidInputError('run: missing value for graph input(s) {}'.format(missing))
        for name in list(named):
            value = np.asarray(named[name])
            declared = self._declared_dtypes.get(name)
            if declared == tensors.BFLOAT16:
                # bfloat16 comes as onnx.numpy_helper gives it (uint16 bit
                # patterns) or as float values to round.
                if value.dtype != np.uint16 and value.dtype.kind != 'f':
                    raise InvalidInputError('run: graph input {!r} is declared bfloat16 but '
                                            'was given {}'.format(name, value.dtype))
                named[name] = value
                continue
            if declared is not None and value.dtype != declared and not (
                    declared == np.dtype(object) and value.dtype.kind in 'OSU'):
                raise InvalidInputError('run: graph input {!r} is declared {} but was given '
                                        '{}'.format(name, declared, value.dtype))
            named[name] = value
        return named

    def _conversion_for(self, feeds):
        if self._static is not None:
            return self._static
        if self._current is not None and self._still_fits(self._current, feeds):
            return self._current
        # Copies, so a caller reusing its arrays cannot change what the
        # conversion was specialized on.
        values = {name: np.array(value, copy=True) for name, value in feeds.items()}
        self._current = converter.convert_model(self._model, runtime_values=values)
        self._current.fed_shapes = {name: np.shape(v) for name, v in feeds.items()}
        return self._current

    @staticmethod
    def _still_fits(converted, feeds):
        for name, value in converted.specialized.items():
            fed = feeds[name]
            if fed.dtype != value.dtype or fed.shape != value.shape or not np.array_equal(
                    fed, value):
                return False
        if converted.shapes_specialized:
            return all(np.shape(feeds[name]) == shape
                       for name, shape in converted.fed_shapes.items())
        return True


# Caffe2's name for the prepared-model class.
Caffe2Rep = DoppioRep


def _onnx_value(value, elem_type):
    """A fetched blob as onnx.numpy_helper gives values: string tensors hold
    str (UTF-8 text; Caffe2's FetchBlob gives bytes); bfloat16 tensors (which
    FetchBlob widens to float32) their uint16 bit patterns."""
    if elem_type == onnx.TensorProto.BFLOAT16 and isinstance(value, np.ndarray):
        return (np.ascontiguousarray(value, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.vectorize(lambda item: item.decode('utf-8') if isinstance(item, bytes)
                            else item, otypes=[object])(value)
    return value
