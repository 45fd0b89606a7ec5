"""ONNX ModelProto -> Doppio init and predict NetDefs.

The init net fills the initializers and Constant outputs (GivenTensor*Fill);
the predict net runs the graph's nodes, each converted by the function that
context.CONVERTERS registers for its op type. Graph inputs that are not
initializers are the predict net's external inputs, fed at run time.

Conversion needs some facts statically: attribute-like inputs (the axes of
Squeeze since opset 13, the starts of Slice since opset 10 ...) and, for a few
ops, shapes. They come from initializers and Constants, and from ONNX shape
inference. When a graph input supplies such a fact, conversion raises
RuntimeValueNeeded; the backend then converts again at the first run with the
fed values and shapes (convert_model's `runtime_values`).
"""

import numpy as np
import onnx
import onnx.shape_inference
from onnx import numpy_helper

from doppio.onnx import context, folding, patterns, tensors
from doppio.onnx.errors import (InvalidModelError, OnnxError, RuntimeValueNeeded,
                                UnsupportedError)
from doppio.proto import doppio_pb2

# Registers the converters in context.CONVERTERS.
from doppio.onnx import ops_einsum, ops_elementwise, ops_nn, ops_reduce, ops_tensor  # noqa: F401

# Converters check what changed between versions (and refuse attributes they
# do not know), so old opsets whose ops they handle convert too.
MIN_OPSET = 1
MAX_OPSET = 17
_DEFAULT_DOMAINS = ('', 'ai.onnx')


class ConvertedModel:
    """The result of a conversion.

    init_net, predict_net: the NetDefs.
    inputs: the graph inputs fed at run time, in graph order (initializers
        excluded, as Caffe2's `uninitialized` list).
    outputs: the graph outputs, in order.
    specialized: the graph inputs whose run-time values were baked into the
        nets (name -> value); empty for an ordinary conversion.
    shapes_specialized: whether the nets assume the fed inputs' shapes.
    """

    def __init__(self, init_net, predict_net, inputs, outputs, specialized,
                 shapes_specialized):
        self.init_net = init_net
        self.predict_net = predict_net
        self.inputs = inputs
        self.outputs = outputs
        self.specialized = specialized
        self.shapes_specialized = shapes_specialized
        # The fed shapes it was converted for (set by the rep that converted
        # it at run time).
        self.fed_shapes = {}


def model_opset(model):
    """The model's version of the default ONNX domain; errors when it imports
    none, or one outside what the converters handle."""
    versions = [entry.version for entry in model.opset_import
                if entry.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise InvalidModelError('the model imports no version of the default ONNX '
                                'operator set (opset_import)')
    opset = max(versions)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UnsupportedError('ONNX opset {} is not supported by doppio (opsets {} to {} '
                               'are)'.format(opset, MIN_OPSET, MAX_OPSET))
    return opset


def convert_model(model, runtime_values=None):
    """Converts `model`. With `runtime_values` (graph input name -> array, as
    fed to a run) the conversion may use those values and their shapes where
    it needs constants; ConvertedModel.specialized says which it used."""
    if not isinstance(model, onnx.ModelProto):
        raise TypeError('expected an onnx.ModelProto, got {}'.format(type(model).__name__))
    _check_text(model)
    opset = model_opset(model)
    runtime_values = dict(runtime_values or {})
    # LayerNorm and Gelu chains become single nodes (patterns.py); shapes
    # still come from inference over the graph as given.
    fused_graph = patterns.fuse(model)[0].graph
    baked = {}
    # A value used statically changes the shapes that follow from it, so
    # shape inference runs again with it baked in until nothing new is used.
    for _ in range(len(model.graph.input) + 1):
        converter = _GraphConverter(model, opset, runtime_values, baked, graph=fused_graph)
        converted = converter.convert()
        used = {name: runtime_values[name] for name in converter.specialized}
        if set(used) <= set(baked):
            return converted
        baked = used
    raise AssertionError('specialization did not settle')


def _check_text(model):
    """Every name the conversion uses is text. (Protobuf hands a string field
    that is not valid UTF-8 back as bytes rather than failing the parse.)"""
    def check(value, what):
        if not isinstance(value, str):
            raise InvalidModelError('{} {!r} is not valid UTF-8 text'.format(what, value))

    graph = model.graph
    check(graph.name, 'the graph name')
    for entry in model.opset_import:
        check(entry.domain, 'opset domain')
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        check(value.name, 'value name')
    for tensor in graph.initializer:
        check(tensor.name, 'initializer name')
    for node in graph.node:
        for field in ('op_type', 'domain', 'name'):
            check(getattr(node, field), 'node ' + field)
        for name in list(node.input) + list(node.output):
            check(name, 'value name')
        for attribute in node.attribute:
            check(attribute.name, 'attribute name')


def _infer_shapes(model, runtime_values, baked, folded=None):
    """ONNX shape inference, on a copy that gives the graph inputs their fed
    shapes, the baked inputs their values, and the `folded` node outputs
    their values (the nodes that made them removed). Inference is advisory:
    when it fails, the declared value_info is all there is."""
    folded = folded or {}
    spaced = any(n.op_type == 'Einsum' and any(b' ' in a.s for a in n.attribute)
                 for n in model.graph.node)
    if runtime_values or folded or spaced:
        model_copy = onnx.ModelProto()
        model_copy.CopyFrom(model)
        # torch writes Einsum equations with spaces ("B H I D, B H J D ->
        # B H I J"), which ONNX's shape inference does not parse.
        for node in model_copy.graph.node:
            if node.op_type == 'Einsum':
                for attribute in node.attribute:
                    attribute.s = attribute.s.replace(b' ', b'')
        if folded:
            kept = [n for n in model_copy.graph.node
                    if not n.output or any(o not in folded for o in n.output)]
            del model_copy.graph.node[:]
            model_copy.graph.node.extend(kept)
            baked = dict(baked, **folded)
        for value_info in model_copy.graph.input:
            value = runtime_values.get(value_info.name)
            if value is None or not value_info.type.HasField('tensor_type'):
                continue
            shape = value_info.type.tensor_type.shape
            shape.Clear()
            for dim in np.shape(value):
                shape.dim.add().dim_value = int(dim)
        for name, value in baked.items():
            try:
                model_copy.graph.initializer.append(numpy_helper.from_array(
                    np.asarray(value), name))
            except Exception:  # a dtype onnx cannot hold: inference goes without it
                pass
        model = model_copy
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                                 data_prop=True)
    except Exception:
        return model


# Rounds of shape inference and folding before conversion (each may reveal
# the next step of a shape computation: Swin needs one round per stage, 4
# or more; it ends as soon as a round finds nothing).
_MAX_FOLD_ROUNDS = 64


class _FoldingView:
    """What folding.try_fold reads of a graph, for folding ahead of the
    conversion: known values and the shapes recorded so far."""

    def __init__(self, static_values, folded_names, graph):
        self.static_values = static_values
        self.folded_names = folded_names
        self.shape_of = graph.shape_of
        self.runtime_shapes_known = graph.runtime_shapes_known


def _constant_node_value(node):
    """A Constant node's value when it is a tensor (value attribute) or a
    number list, else None."""
    for attribute in node.attribute:
        if attribute.name == 'value':
            try:
                return numpy_helper.to_array(attribute.t)
            except Exception:  # malformed: the Constant converter reports it
                return None
        if attribute.name in ('value_int', 'value_ints'):
            return np.asarray(onnx.helper.get_attribute_value(attribute), np.int64)
        if attribute.name in ('value_float', 'value_floats'):
            return np.asarray(onnx.helper.get_attribute_value(attribute), np.float32)
    return None


class _GraphConverter:
    def __init__(self, model, opset, runtime_values, baked, graph=None):
        self.opset = opset
        self.model = model
        self.graph = model.graph if graph is None else graph
        self.runtime_values = runtime_values
        self.runtime_shapes_known = bool(runtime_values)
        self.specialized = set()
        self.static_values = {}
        self.folded_names = set()  # static values folding made (folding.py)
        self.shapes = {}
        self.dtypes = {}
        self.init_ops = []
        self.predict_ops = []
        self.graph_inputs = []
        self._defined = set()
        self._names = set()
        self._baked = baked

    # ---- facts about values ----

    def shape_of(self, name):
        return self.shapes.get(name)

    def dtype_of(self, name):
        return self.dtypes.get(name)

    def record(self, name, shape, dtype=None):
        if shape is not None:
            self.shapes[name] = tuple(None if d is None else int(d) for d in shape)
        if dtype is not None:
            self.dtypes[name] = np.dtype(dtype)

    def _record_value_info(self, value_info, overwrite):
        if not value_info.name or not value_info.type.HasField('tensor_type'):
            return
        if not overwrite and value_info.name in self.shapes:
            return
        tensor_type = value_info.type.tensor_type
        if tensor_type.elem_type:
            try:
                self.dtypes[value_info.name] = tensors.numpy_dtype(tensor_type.elem_type, '')
            except UnsupportedError:
                pass
        if tensor_type.HasField('shape'):
            dims = []
            for dim in tensor_type.shape.dim:
                dims.append(dim.dim_value if dim.HasField('dim_value') and dim.dim_value >= 0
                            else None)
            self.shapes[value_info.name] = tuple(dims)

    # ---- building the nets ----

    def fresh_name(self, base):
        name, counter = base, 0
        while name in self._names:
            counter += 1
            name = '{}_{}'.format(base, counter)
        self._names.add(name)
        return name

    def emit(self, op_type, inputs, outputs, node_name, args):
        op = doppio_pb2.OperatorDef(type=op_type, input=list(inputs), output=list(outputs),
                                    name=node_name)
        for key, value in args.items():
            if value is not None:
                op.arg.append(context.make_argument(key, value))
        self.predict_ops.append(op)
        return op

    def add_constant(self, name, value):
        self.init_ops.append(tensors.fill_op(value, name))
        self.static_values[name] = value
        self.shapes[name] = tuple(value.shape)
        self.dtypes[name] = value.dtype
        self._names.add(name)
        self._defined.add(name)

    # ---- the conversion ----

    def convert(self):
        graph = self.graph
        for value in list(graph.input) + list(graph.output) + list(graph.value_info):
            self._names.add(value.name)
        for node in graph.node:
            self._names.update(node.input)
            self._names.update(node.output)

        initializer_names = self._load_initializers()
        self._load_inputs(initializer_names)
        self._load_shapes()

        for index, node in enumerate(graph.node):
            self._convert_node(node, index)

        outputs = []
        for value in graph.output:
            if not value.name:
                raise InvalidModelError('a graph output has no name')
            if value.name not in self._defined:
                raise InvalidModelError('graph output {!r} is not produced by any node, input '
                                        'or initializer'.format(value.name))
            outputs.append(value.name)

        name = graph.name or 'onnx_model'
        init_net = doppio_pb2.NetDef(name=name + '_init')
        init_net.op.extend(self.init_ops)
        init_net.external_output.extend(op.output[0] for op in self.init_ops)
        predict_net = doppio_pb2.NetDef(name=name + '_predict')
        predict_net.op.extend(self.predict_ops)
        # Everything the init net fills (initializers, Constants, constants
        # the converters made) is an input of the predict net.
        predict_net.external_input.extend(
            [op.output[0] for op in self.init_ops] + self.graph_inputs)
        predict_net.external_output.extend(outputs)
        specialized = {n: self.runtime_values[n] for n in sorted(self.specialized)}
        return ConvertedModel(init_net, predict_net, list(self.graph_inputs), outputs,
                              specialized, self.runtime_shapes_known)

    def _load_initializers(self):
        names = []
        for tensor in self.graph.initializer:
            if not tensor.name:
                raise InvalidModelError('an initializer has no name')
            if tensor.name in self._defined:
                raise InvalidModelError('initializer {!r} is given twice'.format(tensor.name))
            value = tensors.to_array(tensor, 'initializer {!r}'.format(tensor.name))
            self.add_constant(tensor.name, value)
            names.append(tensor.name)
        for tensor in self.graph.sparse_initializer:
            raise UnsupportedError('sparse initializer {!r} is not supported by doppio'.format(
                tensor.values.name))
        return names

    def _load_inputs(self, initializer_names):
        initialized = set(initializer_names)
        for value_info in self.graph.input:
            name = value_info.name
            if not name:
                raise InvalidModelError('a graph input has no name')
            if name in initialized:
                continue  # IR < 4 lists initializers among the inputs too
            if name in self._defined:
                raise InvalidModelError('graph input {!r} is declared twice'.format(name))
            kind = value_info.type.WhichOneof('value')
            if kind != 'tensor_type':
                raise UnsupportedError('graph input {!r} is a {}; doppio supports tensor '
                                       'inputs only'.format(name, kind or 'value of no type'))
            tensors.numpy_dtype(value_info.type.tensor_type.elem_type,
                                'graph input {!r}'.format(name))
            self.graph_inputs.append(name)
            self._defined.add(name)

    def _load_shapes(self):
        # Values the graph computes from shapes (torch's padding and window
        # arithmetic) fold to constants; each round of shape inference with
        # them known may reveal more (a Reshape to a folded shape, then a
        # Shape of its output).
        folded = {}
        for _ in range(_MAX_FOLD_ROUNDS):
            inferred = _infer_shapes(self.model, self.runtime_values, self._baked, folded)
            graph = inferred.graph
            for value_info in list(graph.value_info) + list(graph.output) + list(graph.input):
                self._record_value_info(value_info, overwrite=bool(folded))
            found = self._fold_ahead(folded)
            if not found:
                break
            folded.update(found)
        # What was fed is exact.
        for name, value in self.runtime_values.items():
            if name in self.graph_inputs:
                self.record(name, np.shape(value), np.asarray(value).dtype)
        for name in self._baked:
            if name in self.graph_inputs:
                self.static_values[name] = self.runtime_values[name]
                self.specialized.add(name)

    def _fold_ahead(self, folded):
        """Node outputs that fold given the shapes known so far (not yet in
        `folded`); the conversion folds them again as it goes."""
        known = dict(self.static_values)
        known.update(folded)
        view = _FoldingView(known, set(folded), self)
        found = {}
        for node in self.graph.node:
            if node.op_type == 'Constant' and len(node.output) == 1:
                value = _constant_node_value(node)
                if value is not None:
                    known[node.output[0]] = value
                continue
            if all(o in known for o in node.output if o):
                continue
            values = folding.try_fold(view, node, self.opset)
            if values is None:
                continue
            for name, value in zip(node.output, values):
                known[name] = value
                view.folded_names.add(name)
                if name not in folded:
                    found[name] = value
        return found

    def _convert_node(self, node, index):
        ctx = context.NodeContext(self, node, index)
        if self.opset < 6:
            # Before opset 6 ops listed the inputs they overwrite in place: a
            # memory hint that does not change results.
            ctx.attrs.ignore('consumed_inputs')
        if node.domain not in _DEFAULT_DOMAINS:
            raise UnsupportedError('{} is not supported by doppio: domain {!r} is not the '
                                   'default ONNX domain'.format(ctx.where, node.domain))
        for name in node.input:
            if name and name not in self._defined:
                raise ctx.invalid('input {!r} is not produced by any earlier node, graph '
                                  'input or initializer'.format(name))
        for name in node.output:
            if name and name in self._defined:
                raise ctx.invalid('output {!r} is already defined (ONNX values are '
                                  'assigned once)'.format(name))
        folded = folding.try_fold(self, node, self.opset)
        if folded is not None:
            for name, value in zip(node.output, folded):
                ctx.set_constant(name, value)
                self.folded_names.add(name)
            return
        converter = context.CONVERTERS.get(node.op_type)
        if converter is None and folding.folds(node.op_type):
            # Doppio runs it only as shape arithmetic, folded: shapes fed at
            # the first run may let it fold.
            message = ('{} is not supported by doppio but as constant shape arithmetic, and '
                       'its inputs are not all constants'.format(ctx.where))
            if not self.runtime_shapes_known:
                raise RuntimeValueNeeded(message + ' (the model does not declare them)', None)
            raise UnsupportedError(message)
        if converter is None:
            raise UnsupportedError('{} is not supported by doppio'.format(ctx.where))
        try:
            converter(ctx)
        except OnnxError:
            raise
        except (ValueError, TypeError, OverflowError, KeyError, IndexError) as error:
            # A malformed node that a converter's arithmetic tripped over.
            raise ctx.invalid('cannot convert it: {}: {}'.format(
                type(error).__name__, error)) from None
        unread = ctx.attrs.unread()
        if unread:
            raise ctx.unsupported('attribute(s) {} not supported by doppio'.format(
                ', '.join(repr(a) for a in unread)))
        for name in node.output:
            if name:
                self._defined.add(name)
