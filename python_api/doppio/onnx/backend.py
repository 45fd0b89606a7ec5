"""Runs ONNX models on Doppio: an onnx.backend.base.Backend, as
caffe2.python.onnx.backend was for Caffe2.

    import onnx
    from doppio.onnx import backend
    rep = backend.prepare(onnx.load('model.onnx'))   # device='CPU'
    outputs = rep.run([x])                           # outputs[0], outputs['y']
    init_net, predict_net = backend.onnx_graph_to_caffe2_net(model)

Conversion (see converter.py) turns initializers into GivenTensor*Fill ops of
an init net and the graph's nodes into a predict net whose external inputs
are the graph inputs. Each prepared model runs in a Doppio workspace of its
own. Errors are doppio.onnx.errors.OnnxError (a RuntimeError): an unsupported
op reads "ONNX op 'Foo' (node 'n3', opset 13) is not supported by doppio".
"""

import os
import warnings

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper
from onnx.backend.base import Backend, Device, DeviceType

from doppio.onnx import converter
from doppio.onnx.backend_rep import DoppioRep
from doppio.onnx.errors import (InvalidInputError, InvalidModelError, RuntimeValueNeeded,
                                UnsupportedError)

_NUMPY_TO_ONNX = {
    np.dtype(np.float32): onnx.TensorProto.FLOAT, np.dtype(np.float64): onnx.TensorProto.DOUBLE,
    np.dtype(np.float16): onnx.TensorProto.FLOAT16, np.dtype(np.int8): onnx.TensorProto.INT8,
    np.dtype(np.int16): onnx.TensorProto.INT16, np.dtype(np.int32): onnx.TensorProto.INT32,
    np.dtype(np.int64): onnx.TensorProto.INT64, np.dtype(np.uint8): onnx.TensorProto.UINT8,
    np.dtype(np.uint16): onnx.TensorProto.UINT16, np.dtype(np.bool_): onnx.TensorProto.BOOL,
    np.dtype(np.uint32): onnx.TensorProto.UINT32, np.dtype(np.uint64): onnx.TensorProto.UINT64,
    np.dtype(object): onnx.TensorProto.STRING,
}


def _device_problem(device):
    """Why `device` cannot run imported models ('' when it can)."""
    try:
        parsed = Device(device)
    except (AttributeError, ValueError, TypeError):
        return 'unknown device {!r} (ONNX names devices CPU or CUDA[:id])'.format(device)
    if parsed.type == DeviceType.CPU:
        return ''
    return ('device {!r}: doppio runs imported ONNX models on the CPU only (its CUDA '
            'operators cover training nets, not every op an ONNX graph may use)'.format(device))


def load_model(model):
    """A ModelProto from a ModelProto, serialized bytes, or a file path."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        proto = onnx.ModelProto()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                proto.ParseFromString(bytes(model))
        except (DecodeError, ValueError, RuntimeError) as error:
            raise InvalidModelError('cannot decode the ONNX model: {}'.format(error)) from None
        # Protobuf reports a parse that stopped early as a warning only.
        partial = [w for w in caught if issubclass(w.category, RuntimeWarning)]
        if partial:
            raise InvalidModelError('cannot decode the ONNX model: {}'.format(
                partial[0].message))
        return proto
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, 'rb') as f:
                data = f.read()
        except OSError as error:
            raise InvalidModelError('cannot read ONNX model {!r}: {}'.format(
                str(model), error)) from None
        try:
            return load_model(data)
        except InvalidModelError as error:
            raise InvalidModelError('{}: {}'.format(str(model), error)) from None
    raise TypeError('expected an onnx.ModelProto, bytes or a path, got {}'.format(
        type(model).__name__))


class DoppioBackend(Backend):
    """The ONNX backend of Doppio (Caffe2Backend under its Caffe2 name)."""

    @classmethod
    def supports_device(cls, device):
        return not _device_problem(device)

    @classmethod
    def prepare(cls, model, device='CPU', optimize=True, **kwargs):
        """Converts `model` (ModelProto, bytes or path) and returns a
        DoppioRep to run it. With `optimize` (the default) the net it runs
        gets the inference passes (transformations.optimizeForInference:
        Conv+BN folding, Conv/FC+Relu fusion, in-place activations) once the
        weights are loaded; rep.predict_net stays the converted net. A string
        names the passes instead ('all' adds channels_last_always, which
        runs every convolutional region in NHWC whether or not it pays; see
        optimizeForInference)."""
        problem = _device_problem(device)
        if problem:
            raise UnsupportedError(problem)
        model = load_model(model)
        try:
            converted = converter.convert_model(model)
        except RuntimeValueNeeded:
            converted = None  # converted at the first run, with the fed values
        return DoppioRep(model, converted, optimize=optimize)

    @classmethod
    def run_model(cls, model, inputs, device='CPU', **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device='CPU', outputs_info=None, **kwargs):
        """Runs one NodeProto on `inputs` (a list in the node's input order,
        or a dict by name). `opset_version` picks the opset (default: the
        newest Doppio converts)."""
        if isinstance(inputs, dict):
            values = [inputs[name] for name in node.input if name]
        else:
            values = list(inputs)
        names = [name for name in node.input if name]
        if len(values) != len(names):
            raise InvalidInputError('run_node: node {!r} takes {} inputs, got {}'.format(
                node.op_type, len(names), len(values)))
        graph_inputs = []
        for name, value in zip(names, values):
            value = np.asarray(value)
            if value.dtype not in _NUMPY_TO_ONNX:
                raise InvalidInputError('run_node: input {!r} has unsupported dtype {}'.format(
                    name, value.dtype))
            graph_inputs.append(helper.make_tensor_value_info(
                name, _NUMPY_TO_ONNX[value.dtype], value.shape))
        graph_outputs = []
        for index, name in enumerate(n for n in node.output if n):
            elem_type, shape = onnx.TensorProto.UNDEFINED, None
            if outputs_info is not None and index < len(outputs_info):
                dtype, shape = outputs_info[index]
                elem_type = _NUMPY_TO_ONNX.get(np.dtype(dtype), onnx.TensorProto.UNDEFINED)
            graph_outputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        graph = helper.make_graph([node], 'run_node_' + (node.op_type or 'node'), graph_inputs,
                                  graph_outputs)
        opset = kwargs.get('opset_version', converter.MAX_OPSET)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
        # One node has nothing to fuse.
        return cls.prepare(model, device, optimize=False).run(dict(zip(names, values)))

    @classmethod
    def onnx_graph_to_caffe2_net(cls, model, device='CPU', opset_version=None):
        """(init_net, predict_net) for `model`, as Caffe2Backend's method of
        this name: the init net fills the initializers. A model that needs
        graph-input values to be converted (see DoppioRep) cannot become
        fixed nets and raises RuntimeValueNeeded. `opset_version` is accepted
        for Caffe2 compatibility; the model's own opset_import rules."""
        problem = _device_problem(device)
        if problem:
            raise UnsupportedError(problem)
        converted = converter.convert_model(load_model(model))
        return converted.init_net, converted.predict_net


Caffe2Backend = DoppioBackend

prepare = DoppioBackend.prepare
run_model = DoppioBackend.run_model
run_node = DoppioBackend.run_node
supports_device = DoppioBackend.supports_device
onnx_graph_to_caffe2_net = DoppioBackend.onnx_graph_to_caffe2_net
