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

Only small values of the model fold (shape vectors and scalars, up to
MAX_ELEMENTS), so no large weight is duplicated into the init net, except
through Identity, whose output would hold a copy anyway. Values that folding
itself made from shapes (a ConstantOfShape, then ScatterND writes into it:
Swin's attention mask) fold up to MAX_COMPUTED_ELEMENTS: they are new
constants, not copies.
"""

import math

import numpy as np
from onnx import helper

from doppio.onnx import tensors

MAX_ELEMENTS = 64
MAX_COMPUTED_ELEMENTS = 1 << 20


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


def _mod(node, attrs, values, opset):
    """ONNX Mod: fmod 1 takes the dividend's sign (C's fmod), fmod 0 (integers
    only) the divisor's (Python's %)."""
    a, b = values
    if a.dtype.kind in 'iu' and np.any(b == 0):
        raise ZeroDivisionError('integer modulo by zero')
    if attrs.get('fmod', 0):
        return [np.fmod(a, b).astype(np.result_type(a, b))]
    if a.dtype.kind == 'f' or b.dtype.kind == 'f':
        raise ValueError('Mod of floats needs fmod=1')
    return [np.mod(a, b).astype(np.result_type(a, b))]


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


def _reshape(node, attrs, values, opset):
    """ONNX Reshape (opset 5+): 0 copies the input's dim unless allowzero, one
    -1 takes what remains."""
    x, shape = values[0], [int(d) for d in values[1]]
    if not attrs.get('allowzero', 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _constant_of_shape(node, attrs, values, opset):
    shape = [int(d) for d in values[0]]
    if int(np.prod(shape, dtype=np.int64)) > MAX_COMPUTED_ELEMENTS:
        raise ValueError('too large to fold')
    value = attrs.get('value')
    fill = (np.zeros(1, np.float32) if value is None
            else tensors.to_array(value, 'ConstantOfShape value').reshape(-1))
    return [np.full(shape, fill[0], dtype=fill.dtype)]


def _scatter_nd(node, attrs, values, opset):
    data, indices, updates = values
    reduction = attrs.get('reduction', b'none')
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    out = np.array(data, copy=True)
    k = indices.shape[-1]
    flat_indices = indices.reshape(-1, k).astype(np.int64)
    flat_updates = updates.reshape((flat_indices.shape[0],) + data.shape[k:])
    for index, update in zip(flat_indices, flat_updates):
        where = tuple(int(i) for i in index)
        if reduction == 'add':
            out[where] += update
        elif reduction == 'mul':
            out[where] *= update
        elif reduction == 'none':
            out[where] = update
        else:
            raise ValueError('reduction ' + reduction)
    return [out]


def _expand(node, attrs, values, opset):
    x, shape = values[0], [int(d) for d in values[1]]
    target = np.broadcast_shapes(x.shape, tuple(shape))
    if int(np.prod(target, dtype=np.int64)) > MAX_COMPUTED_ELEMENTS:
        raise ValueError('too large to fold')
    return [np.broadcast_to(x, target).copy()]


def _range(node, attrs, values, opset):
    start, limit, delta = (np.asarray(v).reshape(()) for v in values)
    count = int(max(np.ceil((limit - start) / delta), 0))
    if count > MAX_COMPUTED_ELEMENTS:
        raise ValueError('too large to fold')
    return [(start + delta * np.arange(count)).astype(np.result_type(start, limit, delta))]


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
    'Mod': _mod,
    'Gather': lambda n, a, v, o: [np.take(v[0], v[1].astype(np.int64), axis=a.get('axis', 0))],
    'Concat': lambda n, a, v, o: [np.concatenate(v, axis=a['axis'])],
    'Unsqueeze': _unsqueeze,
    'Squeeze': _squeeze,
    'Slice': _slice,
    'Cast': lambda n, a, v, o: [v[0].astype(tensors.numpy_dtype(a['to'], 'Cast to'))],
    # torch's F.pad with computed pads: Concat -> ConstantOfShape -> Reshape
    # -> Slice (reversed) -> Transpose -> Reshape -> Cast.
    'Reshape': _reshape,
    'Transpose': lambda n, a, v, o: [np.transpose(v[0], a.get('perm'))],
    'ConstantOfShape': _constant_of_shape,
    'ScatterND': _scatter_nd,
    'Expand': _expand,
    'Range': _range,
    'Equal': lambda n, a, v, o: [np.equal(v[0], v[1])],
    'Not': lambda n, a, v, o: [np.logical_not(v[0])],
    'Where': lambda n, a, v, o: [np.where(v[0], v[1], v[2]).astype(np.result_type(v[1], v[2]))],
}


def folds(op_type):
    """Whether folding evaluates `op_type` (given constant inputs)."""
    return op_type in _FOLDERS or op_type == 'Shape'


def try_fold(graph, node, opset):
    """The outputs of `node` as numpy arrays when it folds, else None.
    `graph` is the converter (static_values, folded_names: the values folding
    made, shape_of, runtime_shapes_known)."""
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
    for name, value in zip(node.input, values):
        if value is None:
            return None
        made_here = name in graph.folded_names
        if np.asarray(value).size > (MAX_COMPUTED_ELEMENTS if made_here else limit):
            return None
    if any(np.asarray(v).dtype.kind not in 'biuf' for v in values):
        return None
    try:
        return [np.asarray(out) for out in folder(node, attrs, [np.asarray(v) for v in values],
                                                   opset)]
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, OverflowError):
        return None  # the node's own converter reports what is wrong with it
