"""Graph patterns exporters write for ops ONNX (before opset 17/20) lacks,
folded back into single nodes before conversion, as ONNX Runtime's
LayerNormFusion and GeluFusion do:

  LayerNorm: ReduceMean(X) -> Sub(X, mean) -> Pow(., 2) -> ReduceMean ->
             Add(., eps) -> Sqrt -> Div(centered, .) [-> Mul(., scale) ->
             Add(., bias)]                      => LayerNormalization
  Gelu:      Div(x, sqrt 2) (or Mul(x, 1/sqrt 2)) -> Erf -> Add(., 1) ->
             Mul(x, .) -> Mul(., 0.5) (the two Muls in either order)
                                                => Gelu (ONNX opset 20's op)

A chain folds only when each intermediate value is read by the next node
of the chain alone and is no graph output, and the constants are what the
formula needs (initializers or Constant nodes). The fused node takes the
place of the chain's last node, where all its inputs exist.

Shapes: the rewritten graph is converted with the shapes ONNX inference
gives the original one (converter.convert_model), so nodes ONNX's shape
inference may not know (Gelu in opset 13) cost nothing downstream.
"""

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper


class _Graph:
    def __init__(self, graph, ranks):
        self.graph = graph
        self.ranks = ranks
        self.constants = {}
        for tensor in graph.initializer:
            try:
                self.constants[tensor.name] = numpy_helper.to_array(tensor)
            except Exception:  # converted (and refused) later, with a clear error
                pass
        self.producer = {}
        self.consumers = {}
        for index, node in enumerate(graph.node):
            if node.op_type == 'Constant' and len(node.output) == 1:
                for attribute in node.attribute:
                    if attribute.name == 'value' and attribute.type == onnx.AttributeProto.TENSOR:
                        try:
                            self.constants[node.output[0]] = numpy_helper.to_array(attribute.t)
                        except Exception:
                            pass
            for name in node.output:
                self.producer[name] = index
            for name in node.input:
                self.consumers.setdefault(name, []).append(index)
        self.outputs = {value.name for value in graph.output}

    def node(self, index):
        return self.graph.node[index]

    def only_consumer(self, name):
        """The single node reading `name`, when it is no graph output."""
        readers = self.consumers.get(name, [])
        if len(readers) != 1 or name in self.outputs:
            return None
        return readers[0]

    def scalar(self, name):
        value = self.constants.get(name)
        if value is None or value.size != 1 or value.dtype.kind != 'f':
            return None
        return float(value.reshape(()))

    def other_input(self, node, name):
        """The input of binary `node` that is not `name` (None otherwise)."""
        if len(node.input) != 2:
            return None
        if node.input[0] == name:
            return node.input[1]
        if node.input[1] == name:
            return node.input[0]
        return None


def _attribute(node, name, default=None):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _close(value, target):
    return value is not None and abs(value - target) <= 1e-4 * abs(target)


# ---- Gelu ----

def _match_gelu(g, erf_index):
    """(node indices, x, output) of a Gelu chain around Erf node, or None."""
    erf = g.node(erf_index)
    if len(erf.input) != 1 or erf.input[0] not in g.producer:
        return None
    scale_index = g.producer[erf.input[0]]
    scale = g.node(scale_index)
    if g.only_consumer(erf.input[0]) != erf_index or len(scale.input) != 2:
        return None
    x, divisor = scale.input
    if not ((scale.op_type == 'Div' and _close(g.scalar(divisor), math.sqrt(2))) or
            (scale.op_type == 'Mul' and _close(g.scalar(divisor), 1 / math.sqrt(2)))):
        return None
    add_index = g.only_consumer(erf.output[0])
    if add_index is None or g.node(add_index).op_type != 'Add':
        return None
    one = g.other_input(g.node(add_index), erf.output[0])
    if not _close(g.scalar(one), 1.0):
        return None
    first_index = g.only_consumer(g.node(add_index).output[0])
    if first_index is None or g.node(first_index).op_type != 'Mul':
        return None
    first = g.node(first_index)
    partner = g.other_input(first, g.node(add_index).output[0])
    chain = [scale_index, erf_index, add_index, first_index]
    if partner == x:  # x * (1 + erf) * 0.5
        last_index = g.only_consumer(first.output[0])
        if last_index is None or g.node(last_index).op_type != 'Mul':
            return None
        if not _close(g.scalar(g.other_input(g.node(last_index), first.output[0])), 0.5):
            return None
        return chain + [last_index], x, g.node(last_index).output[0]
    # (x * 0.5) * (1 + erf): the half-x product is the partner.
    if partner not in g.producer:
        return None
    half_index = g.producer[partner]
    half = g.node(half_index)
    if (half.op_type != 'Mul' or g.only_consumer(partner) != first_index or
            not _close(g.scalar(g.other_input(half, x)), 0.5)):
        return None
    return [half_index] + chain, x, first.output[0]


# ---- LayerNorm ----

def _reduce_axes(g, node):
    axes = _attribute(node, 'axes')
    if node.op_type != 'ReduceMean' or axes is None or _attribute(node, 'keepdims', 1) != 1:
        return None
    return sorted(int(a) for a in axes)


def _tail_axis(g, name, axes):
    """The first normalized axis (negative) when `axes` are the trailing dims
    of `name`, else None."""
    rank = g.ranks.get(name)
    if rank is not None:
        axes = sorted(a - rank if a >= 0 else a for a in axes)
    if not axes or axes[-1] != -1 or axes != list(range(-len(axes), 0)):
        return None
    return -len(axes)


def _follow(g, name, op_type):
    index = g.only_consumer(name)
    if index is None or g.node(index).op_type != op_type:
        return None
    return index


def _match_layer_norm(g, mean_index):
    mean = g.node(mean_index)
    axes = _reduce_axes(g, mean)
    if axes is None or len(mean.input) != 1:
        return None
    x = mean.input[0]
    axis = _tail_axis(g, x, axes)
    sub_index = _follow(g, mean.output[0], 'Sub')
    if axis is None or sub_index is None or list(g.node(sub_index).input) != [x, mean.output[0]]:
        return None
    centered = g.node(sub_index).output[0]
    readers = g.consumers.get(centered, [])
    if len(readers) != 2 or centered in g.outputs:
        return None
    kinds = {g.node(i).op_type: i for i in readers}
    if set(kinds) != {'Pow', 'Div'}:
        return None
    pow_index, div_index = kinds['Pow'], kinds['Div']
    square = g.node(pow_index)
    if list(square.input[:1]) != [centered] or not _close(g.scalar(square.input[1]), 2.0):
        return None
    var_index = _follow(g, square.output[0], 'ReduceMean')
    if var_index is None or _reduce_axes(g, g.node(var_index)) != axes:
        return None
    eps_index = _follow(g, g.node(var_index).output[0], 'Add')
    if eps_index is None:
        return None
    epsilon = g.scalar(g.other_input(g.node(eps_index), g.node(var_index).output[0]))
    sqrt_index = _follow(g, g.node(eps_index).output[0], 'Sqrt')
    if epsilon is None or epsilon < 0 or sqrt_index is None:
        return None
    divide = g.node(div_index)
    if list(divide.input) != [centered, g.node(sqrt_index).output[0]]:
        return None
    if g.only_consumer(g.node(sqrt_index).output[0]) != div_index:
        return None
    chain = [mean_index, sub_index, pow_index, var_index, eps_index, sqrt_index, div_index]
    output, scale, bias = divide.output[0], None, None
    mul_index = _follow(g, output, 'Mul')
    if mul_index is not None:
        candidate = g.other_input(g.node(mul_index), output)
        if candidate in g.constants:
            chain.append(mul_index)
            scale, output = candidate, g.node(mul_index).output[0]
            add_index = _follow(g, output, 'Add')
            if add_index is not None:
                candidate = g.other_input(g.node(add_index), output)
                if candidate in g.constants:
                    chain.append(add_index)
                    bias, output = candidate, g.node(add_index).output[0]
    return chain, x, scale, bias, output, axis, epsilon


# ---- the rewrite ----

def _ranks(model):
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:
        return {}
    ranks = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input):
        if value.type.HasField('tensor_type') and value.type.tensor_type.HasField('shape'):
            ranks[value.name] = len(value.type.tensor_type.shape.dim)
    return ranks


def fuse(model):
    """A copy of `model` whose graph has the chains above folded, and the
    counts {'LayerNormalization': n, 'Gelu': m}; `model` itself when none
    folds."""
    g = _Graph(model.graph, _ranks(model))
    replaced = {}  # index of a chain's last node -> the fused node
    dropped = set()
    extra_initializers = []
    counts = {'LayerNormalization': 0, 'Gelu': 0}
    for index, node in enumerate(model.graph.node):
        if index in dropped:
            continue
        if node.op_type == 'Erf':
            match = _match_gelu(g, index)
            if match is not None and not dropped.intersection(match[0]):
                chain, x, output = match
                fused = helper.make_node('Gelu', [x], [output], name=node.name + '_gelu')
                dropped.update(chain)
                replaced[max(chain)] = fused
                counts['Gelu'] += 1
        elif node.op_type == 'ReduceMean':
            match = _match_layer_norm(g, index)
            if match is not None and not dropped.intersection(match[0]):
                chain, x, scale, bias, output, axis, epsilon = match
                if scale is None:
                    # LayerNormalization needs a Scale: ones, shaped by
                    # broadcasting (a scalar broadcasts to any row).
                    scale = node.name + '_layer_norm_scale'
                    extra_initializers.append(numpy_helper.from_array(
                        np.ones((), np.float32), scale))
                inputs = [x, scale] + ([bias] if bias is not None else [])
                fused = helper.make_node('LayerNormalization', inputs, [output],
                                         name=node.name + '_layer_norm', axis=axis,
                                         epsilon=epsilon)
                dropped.update(chain)
                replaced[max(chain)] = fused
                counts['LayerNormalization'] += 1
    if not replaced:
        return model, counts
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    del rewritten.graph.node[:]
    for index, node in enumerate(model.graph.node):
        if index in replaced:
            rewritten.graph.node.append(replaced[index])
        elif index not in dropped:
            rewritten.graph.node.append(node)
    rewritten.graph.initializer.extend(extra_initializers)
    return rewritten, counts
