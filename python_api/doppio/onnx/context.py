"""What an op converter sees of one ONNX node: its attributes (type-checked),
its inputs and outputs, what is known statically about them (constant
values, shapes, element types) and the means to emit Doppio ops.

Converters are registered per ONNX op type with @converts; each takes a
NodeContext and emits ops through it. Errors name the node as
"ONNX op 'Conv' (node 'conv1', opset 13)".
"""

import numpy as np
from onnx import AttributeProto

from doppio.onnx import tensors
from doppio.onnx.errors import InvalidModelError, RuntimeValueNeeded, UnsupportedError
from doppio.proto import doppio_pb2

# ONNX op type -> converter function(ctx).
CONVERTERS = {}


def converts(*op_types):
    """Registers the decorated function as the converter of `op_types`."""
    def register(function):
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise AssertionError('two converters for ONNX op ' + op_type)
            CONVERTERS[op_type] = function
        return function
    return register


_A = AttributeProto
_FIELD_OF_TYPE = {
    _A.FLOAT: 'f', _A.INT: 'i', _A.STRING: 's', _A.TENSOR: 't', _A.GRAPH: 'g',
    _A.FLOATS: 'floats', _A.INTS: 'ints', _A.STRINGS: 'strings', _A.TENSORS: 'tensors',
    _A.GRAPHS: 'graphs', _A.SPARSE_TENSOR: 'sparse_tensor',
    _A.SPARSE_TENSORS: 'sparse_tensors',
}


_SCALAR_FIELDS = ('f', 'i', 's', 't', 'g', 'sparse_tensor')


def _untyped_attribute_type(attribute):
    """The type of an attribute that does not state it (IR version 1): the
    field that is filled."""
    for kind, field in _FIELD_OF_TYPE.items():
        if field in _SCALAR_FIELDS and attribute.HasField(field):
            return kind
    for kind, field in _FIELD_OF_TYPE.items():
        if field not in _SCALAR_FIELDS and len(getattr(attribute, field)):
            return kind
    return _A.UNDEFINED


def _type_name(kind):
    try:
        return _A.AttributeType.Name(kind)
    except ValueError:
        return 'unknown type {}'.format(kind)


class Attributes:
    """A node's attributes, read with a type check. Every attribute a
    converter does not read (or explicitly ignore) makes the conversion fail:
    an attribute that changes the op's meaning is never silently dropped."""

    def __init__(self, node, where):
        self._where = where
        self._attributes = {}
        self._read = set()
        for attribute in node.attribute:
            if not attribute.name:
                raise InvalidModelError('{}: an attribute has no name'.format(where))
            if attribute.name in self._attributes:
                raise InvalidModelError('{}: attribute {!r} is given twice'.format(
                    where, attribute.name))
            if attribute.ref_attr_name:
                raise UnsupportedError('{}: attribute {!r} refers to a function attribute; '
                                       'functions are not supported'.format(
                                           where, attribute.name))
            self._attributes[attribute.name] = attribute

    def has(self, name):
        return name in self._attributes

    def ignore(self, *names):
        """Marks attributes as handled without reading them (e.g. Dropout's
        seed, which inference does not use)."""
        self._read.update(names)

    def unread(self):
        return sorted(set(self._attributes) - self._read)

    def _get(self, name, kind):
        attribute = self._attributes.get(name)
        if attribute is None:
            return None
        self._read.add(name)
        actual = attribute.type
        if actual == _A.UNDEFINED:
            actual = _untyped_attribute_type(attribute)
        if actual != kind:
            raise InvalidModelError('{}: attribute {!r} should be {} but is {}'.format(
                self._where, name, _type_name(kind), _type_name(actual)))
        return getattr(attribute, _FIELD_OF_TYPE[kind])

    def int(self, name, default=None):
        value = self._get(name, _A.INT)
        return default if value is None else int(value)

    def float(self, name, default=None):
        value = self._get(name, _A.FLOAT)
        return default if value is None else float(value)

    def string(self, name, default=None):
        value = self._get(name, _A.STRING)
        if value is None:
            return default
        try:
            return value.decode('utf-8')
        except UnicodeDecodeError:
            raise InvalidModelError('{}: attribute {!r} is not UTF-8 text'.format(
                self._where, name)) from None

    def ints(self, name, default=None):
        value = self._get(name, _A.INTS)
        return default if value is None else [int(v) for v in value]

    def floats(self, name, default=None):
        value = self._get(name, _A.FLOATS)
        return default if value is None else [float(v) for v in value]

    def strings(self, name, default=None):
        value = self._get(name, _A.STRINGS)
        return default if value is None else list(value)

    def tensor(self, name):
        """A TENSOR attribute as a numpy array, or None."""
        value = self._get(name, _A.TENSOR)
        if value is None:
            return None
        return tensors.to_array(value, '{}: attribute {!r}'.format(self._where, name))


class NodeContext:
    """One node being converted, and the graph converter behind it."""

    def __init__(self, graph, node, index):
        self._graph = graph
        self.node = node
        self.op_type = node.op_type
        self.opset = graph.opset
        display = node.name if node.name else '#{}'.format(index)
        self.where = "ONNX op '{}' (node '{}', opset {})".format(
            node.op_type, display, graph.opset)
        self.attrs = Attributes(node, self.where)

    # ---- errors ----

    def unsupported(self, message):
        return UnsupportedError('{}: {}'.format(self.where, message))

    def invalid(self, message):
        return InvalidModelError('{}: {}'.format(self.where, message))

    # ---- inputs and outputs ----

    @property
    def num_inputs(self):
        """Inputs given, not counting omitted trailing optional ones."""
        count = len(self.node.input)
        while count and not self.node.input[count - 1]:
            count -= 1
        return count

    @property
    def num_outputs(self):
        count = len(self.node.output)
        while count and not self.node.output[count - 1]:
            count -= 1
        return count

    def input(self, index):
        """The blob of a required input."""
        name = self.optional_input(index)
        if name is None:
            raise self.invalid('input {} is required but missing'.format(index))
        return name

    def optional_input(self, index):
        if index < len(self.node.input) and self.node.input[index]:
            return self.node.input[index]
        return None

    def inputs(self):
        """The blobs of all given inputs (omitted ones skipped)."""
        return [name for name in self.node.input if name]

    def output(self, index):
        name = self.optional_output(index)
        if name is None:
            raise self.invalid('output {} is required but missing'.format(index))
        return name

    def optional_output(self, index):
        if index < len(self.node.output) and self.node.output[index]:
            return self.node.output[index]
        return None

    def check_inputs(self, minimum, maximum=None):
        maximum = minimum if maximum is None else maximum
        if not minimum <= self.num_inputs <= maximum:
            expected = str(minimum) if minimum == maximum else '{} to {}'.format(
                minimum, maximum)
            raise self.invalid('takes {} inputs, got {}'.format(expected, self.num_inputs))
        for index in range(minimum):
            self.input(index)

    def check_outputs(self, minimum, maximum=None):
        maximum = minimum if maximum is None else maximum
        if not minimum <= self.num_outputs <= maximum:
            expected = str(minimum) if minimum == maximum else '{} to {}'.format(
                minimum, maximum)
            raise self.invalid('has {} outputs, expected {}'.format(
                self.num_outputs, expected))
        for index in range(minimum):
            self.output(index)

    # ---- what is known statically ----

    def static_value(self, name):
        """The constant value of blob `name` if it is one (initializer,
        Constant output, folded value), else None; never asks for run-time
        values."""
        return self._graph.static_values.get(name)

    def static(self, index, what):
        """Input `index` as a numpy array that must be known when converting.
        A graph input fed at run time is asked for (RuntimeValueNeeded), so
        the backend can specialize the model on its value."""
        name = self.input(index)
        value = self._graph.static_values.get(name)
        if value is not None:
            return value
        if name in self._graph.runtime_values:
            self._graph.specialized.add(name)
            value = self._graph.runtime_values[name]
            self._graph.static_values[name] = value
            return value
        message = ('{}: input {} ({}, {!r}) must be a constant (an initializer or a '
                   'Constant) to convert to Doppio ops'.format(self.where, index, what, name))
        if name in self._graph.graph_inputs:
            raise RuntimeValueNeeded(message + '; here it is a graph input, known only '
                                     'at run time', name)
        if not self._graph.runtime_shapes_known:
            # Computed from shapes, it folds once the fed shapes are known
            # (folding.py): the backend converts again at the first run.
            raise RuntimeValueNeeded(message + '; here it is computed by the graph, '
                                     'perhaps from shapes known only at run time', None)
        raise UnsupportedError(message + '; here it is computed by the graph')

    def optional_static(self, index, what):
        return None if self.optional_input(index) is None else self.static(index, what)

    def shape(self, name):
        """The shape of blob `name`: a tuple of ints (None for an unknown
        dim), or None when even the rank is unknown."""
        return self._graph.shape_of(name)

    def rank(self, name):
        shape = self.shape(name)
        if shape is None:
            raise self._shape_needed(name, 'the rank')
        return len(shape)

    def static_shape(self, name):
        """The full shape of `name`, every dim known."""
        shape = self.shape(name)
        if shape is None or any(d is None for d in shape):
            raise self._shape_needed(name, 'the shape')
        return shape

    def _shape_needed(self, name, what):
        message = '{}: needs {} of {!r}, which is not known when converting'.format(
            self.where, what, name)
        if not self._graph.runtime_shapes_known:
            return RuntimeValueNeeded(message + ' (the model does not declare it)', None)
        return UnsupportedError(message)

    def dtype(self, name):
        """The numpy dtype of blob `name`, or None when unknown."""
        return self._graph.dtype_of(name)

    def float_dtype(self, name):
        """The dtype of `name` for ops whose constants must match it; float32
        when unknown."""
        dtype = self.dtype(name)
        return np.dtype(np.float32) if dtype is None else dtype

    # ---- emitting ----

    def op(self, op_type, inputs, outputs, **args):
        """Appends a Doppio op to the predict net; returns its OperatorDef."""
        return self._graph.emit(op_type, inputs, outputs, self.node.name, args)

    def temp(self, hint):
        """A fresh blob name for an intermediate result of this node."""
        base = self.node.output[0] if len(self.node.output) and self.node.output[0] else 'onnx'
        return self._graph.fresh_name('{}__{}'.format(base, hint))

    def constant(self, value, hint='const'):
        """A blob holding `value` (filled once, in the init net)."""
        name = self.temp(hint)
        self._graph.add_constant(name, np.asarray(value))
        return name

    def scalar_like(self, value, name, hint='scalar'):
        """A one-element constant of the dtype of blob `name`."""
        return self.constant(np.array([value], dtype=self.float_dtype(name)), hint)

    def set_constant(self, output, value):
        """Output `output` is the constant `value`: filled in the init net and
        known to later nodes."""
        value = np.asarray(value)
        self._graph.add_constant(output, value)

    def record_shape(self, name, shape, dtype=None):
        """What a converter knows of a value it made (used by later nodes
        when shape inference did not get there)."""
        self._graph.record(name, shape, dtype)


def make_argument(name, value):
    """A Doppio Argument from a Python value: bool/int -> i, float -> f,
    str -> s, lists of ints/floats/strings -> ints/floats/strings."""
    argument = doppio_pb2.Argument(name=name)
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        argument.i = int(value)
    elif isinstance(value, (float, np.floating)):
        argument.f = float(value)
    elif isinstance(value, str):
        argument.s = value.encode('utf-8')
    elif isinstance(value, bytes):
        argument.s = value
    else:
        values = list(np.asarray(value).reshape(-1).tolist()) if isinstance(
            value, np.ndarray) else list(value)
        if all(isinstance(v, (bool, int, np.integer)) for v in values):
            argument.ints.extend(int(v) for v in values)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
            argument.floats.extend(float(v) for v in values)
        elif all(isinstance(v, (str, bytes)) for v in values):
            argument.strings.extend(v.encode('utf-8') if isinstance(v, str) else v
                                    for v in values)
        else:
            raise TypeError('argument {!r}: cannot encode {!r}'.format(name, value))
    return argument
