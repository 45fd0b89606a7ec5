"""Constant folding of shape arithmetic during conversion.

Exporters compute the attribute-like inputs of some nodes in the graph:
torch.chunk becomes Shape -> Gather -> Add -> Div -> Mul -> Slice(ends), as
in ShuffleNetV2's channel split. Doppio ops take such values as arguments,
so the converter folds these chains: a node whose inputs are all known
becomes a constant of the init net, and Shape of a value whose shape is
known becomes its dims.

Shapes of graph inputs are trusted only when they were fed: a model is
converted for the shapes of its first run and again when later runs feed
other shapes (converter.convert_model, ConvertedModel.shapes_specialized),
so a declared batch size of 1 never leaks into a run of batch 8.

Only small values fold (shape vectors and scalars, up to MAX_ELEMENTS), so
no large tensor is duplicated into the init net, except through Identity,
whose output would hold a copy anyway.
"""

import math

import numpy as np
from onnx import helper

from doppio.onnx import tensors

MAX_ELEMENTS = 64


def _attributes(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _integer_divide(a, b):
    """ONNX Div on integers truncates toward zero, as C does."""
    if np.any(b == 0):
        raise ZeroDivisionError('integer division by zero')
    quotient = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * quotient).astype(np.result_type(a, b))


def _divide(a, b):
    if a.dtype.kind in 'iu' and b.dtype.kind in 'iu':
        return _integer_divide(a, b)
    return np.asarray(a / b).astype(np.result_type(a, b))


def _axes(node, attrs, values, opset, index, since):
    if opset >= since:
        return None if len(values) <= index else [int(v) for v in values[index]]
    return attrs.get('axes')


def _unsqueeze(node, attrs, values, opset):
    x = values[0]
    axes = _axes(node, attrs, values, opset, 1, 13)
    rank = x.ndim + len(axes)
    for axis in sorted(a + rank if a < 0 else a for a in axes):
        x = np.expand_dims(x, axis)
    return [x]


def _squeeze(node, attrs, values, opset):
    axes = _axes(node, attrs, values, opset, 1, 13)
    x = values[0]
    if axes is None:
        return [np.squeeze(x)]
    return [np.squeeze(x, axis=tuple(a + x.ndim if a < 0 else a for a in axes))]


def _slice(node, attrs, values, opset):
    x = values[0]
    if opset >= 10:
        starts, ends = values[1], values[2]
        axes = values[3] if len(values) > 3 else list(range(len(starts)))
        steps = values[4] if len(values) > 4 else [1] * len(starts)
    else:
        starts, ends = attrs['starts'], attrs['ends']
        axes = attrs.get('axes', list(range(len(starts))))
        steps = [1] * len(starts)
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = int(axis) + x.ndim if axis < 0 else int(axis)
        index[axis] = slice(int(start), int(end), int(step))
    return [x[tuple(index)]]


def _shape(node, attrs, values, opset, shape):
    dims = np.array(shape, dtype=np.int64)
    if opset >= 15:
        return [dims[attrs.get('start', 0):attrs.get('end', None)]]
    return [dims]


_FOLDERS = {
    'Identity': lambda n, a, v, o: [v[0]],
    'Neg': lambda n, a, v, o: [np.negative(v[0])],
    'Add': lambda n, a, v, o: [np.add(v[0], v[1]).astype(np.result_type(v[0], v[1]))],
    'Sub': lambda n, a, v, o: [np.subtract(v[0], v[1]).astype(np.result_type(v[0], v[1]))],
    'Mul': lambda n, a, v, o: [np.multiply(v[0], v[1]).astype(np.result_type(v[0], v[1]))],
    'Div': lambda n, a, v, o: [_divide(v[0], v[1])],
    'Gather': lambda n, a, v, o: [np.take(v[0], v[1].astype(np.int64), axis=a.get('axis', 0))],
    'Concat': lambda n, a, v, o: [np.concatenate(v, axis=a['axis'])],
    'Unsqueeze': _unsqueeze,
    'Squeeze': _squeeze,
    'Slice': _slice,
    'Cast': lambda n, a, v, o: [v[0].astype(tensors.numpy_dtype(a['to'], 'Cast to'))],
}


def try_fold(graph, node, opset):
    """The outputs of `node` as numpy arrays when it folds, else None.
    `graph` is the converter (static_values, shape_of, runtime_shapes_known)."""
    if len(node.output) != 1:
        return None
    try:
        attrs = _attributes(node)
    except (ValueError, TypeError):
        return None  # a malformed attribute: the node's converter names it
    if node.op_type == 'Shape':
        if len(node.input) != 1 or not graph.runtime_shapes_known:
            return None
        shape = graph.shape_of(node.input[0])
        if shape is None or any(d is None for d in shape):
            return None
        return _shape(node, attrs, [], opset, shape)
    folder = _FOLDERS.get(node.op_type)
    if folder is None or not node.input or any(not name for name in node.input):
        return None
    values = [graph.static_values.get(name) for name in node.input]
    # Identity of a constant of any size: exporters alias shared weights so
    # (torch dedups equal initializers); a constant stays visible as one to
    # the passes that read weights (MatMul + bias), where a Copy op in the
    # predict net would hide it.
    limit = math.inf if node.op_type == 'Identity' else MAX_ELEMENTS
    if any(v is None or np.asarray(v).size > limit for v in values):
        return None
    if any(np.asarray(v).dtype.kind not in 'biuf' for v in values):
        return None
    try:
        return [np.asarray(out) for out in folder(node, attrs, [np.asarray(v) for v in values],
                                                   opset)]
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError):
        return None  # the node's own converter reports what is wrong with it
