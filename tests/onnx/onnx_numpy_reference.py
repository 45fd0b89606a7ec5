"""A small, slow, independent ONNX evaluator in numpy, for tests.

python3-onnx 1.12 has no onnx.reference, so the export tests check models
with this instead. It follows the ONNX operator specs (opsets 9 to 17) and
shares no code with doppio; frontend_reference_evaluator_test.py checks it
against torch.nn.functional. Only the ops and attributes the frontend
emits are here, and anything else is refused rather than guessed.

    outputs = run_model(model, {'data': x})   # graph output name -> array
"""
import itertools

import numpy as np
from onnx import numpy_helper
from onnx.mapping import TENSOR_TYPE_TO_NP_TYPE


class NotImplementedInReference(NotImplementedError):
    pass


def _attrs(node):
    values = {}
    for attr in node.attribute:
        if attr.type == attr.INT:
            values[attr.name] = attr.i
        elif attr.type == attr.FLOAT:
            values[attr.name] = attr.f
        elif attr.type == attr.INTS:
            values[attr.name] = list(attr.ints)
        elif attr.type == attr.FLOATS:
            values[attr.name] = list(attr.floats)
        elif attr.type == attr.STRING:
            values[attr.name] = attr.s.decode()
        elif attr.type == attr.TENSOR:
            values[attr.name] = numpy_helper.to_array(attr.t)
        else:
            raise NotImplementedInReference('attribute type {} of {}'.format(
                attr.type, node.op_type))
    return values


def _window_geometry(x, a, kernel):
    """strides, dilations, (begin, end) pads per spatial axis; auto_pad other
    than NOTSET is not used by the exporter and refused."""
    n = x.ndim - 2
    if a.get('auto_pad', 'NOTSET') != 'NOTSET':
        raise NotImplementedInReference('auto_pad ' + a['auto_pad'])
    strides = a.get('strides', [1] * n)
    dilations = a.get('dilations', [1] * n)
    pads = a.get('pads', [0] * (2 * n))
    return strides, dilations, [(pads[i], pads[n + i]) for i in range(n)]


def _output_size(size, kernel, stride, dilation, pad, ceil_mode):
    span = size + pad[0] + pad[1] - ((kernel - 1) * dilation + 1)
    if ceil_mode:
        out = -(-span // stride) + 1
        # A window that starts in the end padding is dropped (ONNX and
        # PyTorch agree on this).
        if (out - 1) * stride >= size + pad[0]:
            out -= 1
        return out
    return span // stride + 1


def _windows(padded, kernel, strides, dilations, out_sizes):
    """For each kernel offset, the strided view of `padded` it reads:
    arrays of shape [N, C, *out_sizes]."""
    for offset in itertools.product(*[range(k) for k in kernel]):
        index = [slice(None), slice(None)]
        for o, s, d, size in zip(offset, strides, dilations, out_sizes):
            index.append(slice(o * d, o * d + s * (size - 1) + 1, s))
        yield offset, padded[tuple(index)]


def _pad_to_fit(x, pads, out_sizes, kernel, strides, dilations, value):
    """Pads x by `pads` and, for ceil_mode, at the end until every window fits."""
    widths = [(0, 0), (0, 0)]
    for i, (begin, end) in enumerate(pads):
        needed = (out_sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1
        have = x.shape[2 + i] + begin + end
        widths.append((begin, end + max(0, needed - have)))
    return np.pad(x, widths, constant_values=value)


def conv(x, w, b=None, **a):
    kernel = list(w.shape[2:])
    strides, dilations, pads = _window_geometry(x, a, kernel)
    group = a.get('group', 1)
    out_sizes = [_output_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                              False) for i in range(len(kernel))]
    padded = _pad_to_fit(x, pads, out_sizes, kernel, strides, dilations, 0)
    n, c = x.shape[:2]
    m = w.shape[0]
    cin, cout = c // group, m // group
    y = np.zeros([n, m] + out_sizes, np.float64)
    for offset, view in _windows(padded, kernel, strides, dilations, out_sizes):
        for g in range(group):
            patch = view[:, g * cin:(g + 1) * cin].astype(np.float64)
            taps = w[(slice(g * cout, (g + 1) * cout), slice(None)) + offset]
            y[:, g * cout:(g + 1) * cout] += np.einsum('nc...,mc->nm...', patch, taps)
    if b is not None:
        y += b.reshape([1, m] + [1] * len(kernel))
    return y.astype(x.dtype)


def _pool(x, a, reduce_max):
    kernel = a['kernel_shape']
    strides, dilations, pads = _window_geometry(x, a, kernel)
    ceil_mode = a.get('ceil_mode', 0)
    out_sizes = [_output_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                              ceil_mode) for i in range(len(kernel))]
    if reduce_max:
        padded = _pad_to_fit(x, pads, out_sizes, kernel, strides, dilations, -np.inf)
        y = np.full(x.shape[:2] + tuple(out_sizes), -np.inf)
        for _, view in _windows(padded, kernel, strides, dilations, out_sizes):
            y = np.maximum(y, view)
        return y.astype(x.dtype)
    if any(d != 1 for d in dilations):
        raise NotImplementedInReference('dilated AveragePool')
    padded = _pad_to_fit(x.astype(np.float64), pads, out_sizes, kernel, strides, dilations, 0)
    # Which positions count: the image, plus the explicit pads with
    # count_include_pad; never the extra end padding of ceil_mode.
    counted = np.pad(np.ones(x.shape[2:]), pads,
                     constant_values=1 if a.get('count_include_pad', 0) else 0)
    counted = _pad_to_fit(counted[None, None], [(0, 0)] * len(kernel), out_sizes, kernel,
                          strides, dilations, 0)
    total = np.zeros(x.shape[:2] + tuple(out_sizes))
    count = np.zeros((1, 1) + tuple(out_sizes))
    for _, view in _windows(padded, kernel, strides, dilations, out_sizes):
        total += view
    for _, view in _windows(counted, kernel, strides, dilations, out_sizes):
        count += view
    return (total / count).astype(x.dtype)


def batch_normalization(x, scale, bias, mean, var, **a):
    shape = [1, -1] + [1] * (x.ndim - 2)
    eps = a.get('epsilon', 1e-5)
    y = (x.astype(np.float64) - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


def gemm(a_, b_, c_=None, **a):
    a_ = a_.T if a.get('transA', 0) else a_
    b_ = b_.T if a.get('transB', 0) else b_
    y = a.get('alpha', 1.0) * (a_.astype(np.float64) @ b_.astype(np.float64))
    if c_ is not None:
        y = y + a.get('beta', 1.0) * c_
    return y.astype(a_.dtype)


def _softmax_along(x, axes, log):
    shifted = x.astype(np.float64) - x.max(axis=axes, keepdims=True)
    logsum = np.log(np.exp(shifted).sum(axis=axes, keepdims=True))
    return (shifted - logsum) if log else np.exp(shifted - logsum)


def softmax(x, opset, log=False, **a):
    if opset >= 13:
        axis = a.get('axis', -1) % x.ndim
        axes = (axis,)
    else:
        # Before opset 13: x as a 2-D matrix split at axis, rows normalized.
        axis = a.get('axis', 1) % x.ndim if x.ndim else 0
        axes = tuple(range(axis, x.ndim))
    return _softmax_along(x, axes, log).astype(x.dtype)


def reshape(x, shape, **a):
    dims = [int(d) for d in shape]
    if not a.get('allowzero', 0):
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(dims)


def flatten(x, **a):
    axis = a.get('axis', 1)
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)),
                     int(np.prod(x.shape[axis:], dtype=np.int64)))


def _axes_from(node_inputs, a, opset, version):
    if opset >= version:
        return None if len(node_inputs) < 2 else [int(v) for v in node_inputs[1]]
    return a.get('axes')


def unsqueeze(inputs, a, opset):
    x = inputs[0]
    axes = _axes_from(inputs, a, opset, 13)
    rank = x.ndim + len(axes)
    shape = list(x.shape)
    for axis in sorted(v % rank for v in axes):
        shape.insert(axis, 1)
    return x.reshape(shape)


def squeeze(inputs, a, opset):
    x = inputs[0]
    axes = _axes_from(inputs, a, opset, 13)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(v % x.ndim for v in axes))


def clip(inputs, a, opset):
    x = inputs[0]
    if opset >= 11:
        low = inputs[1] if len(inputs) > 1 and inputs[1] is not None else -np.inf
        high = inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.inf
    else:
        low, high = a.get('min', -np.inf), a.get('max', np.inf)
    return np.minimum(np.maximum(x, low), high).astype(x.dtype)


def _divide(a_, b_):
    if np.issubdtype(a_.dtype, np.integer):
        return np.trunc(a_ / b_).astype(a_.dtype)
    return (a_ / b_).astype(a_.dtype)


def _same_type(fn):
    return lambda x, **a: fn(x).astype(x.dtype)


_ELEMENTWISE = {
    'Relu': _same_type(lambda x: np.maximum(x, 0)),
    'Sigmoid': _same_type(lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
    'Tanh': _same_type(np.tanh), 'Exp': _same_type(np.exp), 'Log': _same_type(np.log),
    'Sqrt': _same_type(np.sqrt), 'Abs': _same_type(np.abs), 'Neg': _same_type(np.negative),
    'Softplus': _same_type(lambda x: np.log1p(np.exp(x.astype(np.float64)))),
    'LeakyRelu': lambda x, **a: np.where(x >= 0, x, x * a.get('alpha', 0.01)).astype(x.dtype),
    'Elu': lambda x, **a: np.where(x >= 0, x, a.get('alpha', 1.0) * np.expm1(x)).astype(x.dtype),
    'Identity': lambda x, **a: x.copy(),
    'Transpose': lambda x, **a: np.transpose(x, a.get('perm')),
    'Flatten': flatten,
    'Cast': lambda x, **a: x.astype(TENSOR_TYPE_TO_NP_TYPE[a['to']]),
    'Shape': lambda x, **a: np.array(x.shape, np.int64),
    'Conv': conv,
    'BatchNormalization': batch_normalization,
    'Gemm': gemm,
    'MaxPool': lambda x, **a: _pool(x, a, True),
    'AveragePool': lambda x, **a: _pool(x, a, False),
    'GlobalMaxPool': lambda x, **a: x.max(axis=tuple(range(2, x.ndim)), keepdims=True),
    'GlobalAveragePool': lambda x, **a: x.mean(axis=tuple(range(2, x.ndim)),
                                                keepdims=True).astype(x.dtype),
    'Reshape': reshape,
    'MatMul': lambda a_, b_, **a: np.matmul(a_.astype(np.float64), b_).astype(a_.dtype),
    'Add': lambda a_, b_, **a: (a_ + b_).astype(a_.dtype),
    'Sub': lambda a_, b_, **a: (a_ - b_).astype(a_.dtype),
    'Mul': lambda a_, b_, **a: (a_ * b_).astype(a_.dtype),
    'Div': lambda a_, b_, **a: _divide(a_, b_),
    'Concat': lambda *xs, **a: np.concatenate(xs, axis=a['axis']),
}
_VARIADIC = {'Sum': np.add, 'Max': np.maximum, 'Min': np.minimum}


def run_node(node, inputs, opset):
    """Outputs of one node (a list) on numpy inputs (None for an omitted
    optional input)."""
    a = _attrs(node)
    kind = node.op_type
    if kind == 'Constant':
        if 'value' not in a:
            raise NotImplementedInReference('Constant without a tensor value')
        return [a['value']]
    if kind in ('Softmax', 'LogSoftmax'):
        return [softmax(inputs[0], opset, log=kind == 'LogSoftmax', **a)]
    if kind == 'Unsqueeze':
        return [unsqueeze(inputs, a, opset)]
    if kind == 'Squeeze':
        return [squeeze(inputs, a, opset)]
    if kind == 'Clip':
        return [clip(inputs, a, opset)]
    if kind == 'Dropout':
        # Inference: the input passes unchanged (opset 12+ would need
        # training_mode to be off, its default).
        return [inputs[0].copy()]
    if kind in _VARIADIC:
        result = inputs[0]
        for x in inputs[1:]:
            result = _VARIADIC[kind](result, x)
        return [np.asarray(result).astype(inputs[0].dtype)]
    if kind not in _ELEMENTWISE:
        raise NotImplementedInReference('op type ' + kind)
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return [_ELEMENTWISE[kind](*inputs, **a)]


def run_model(model, feeds):
    """Evaluates the model's graph on `feeds` (input name -> array); returns
    graph output name -> array."""
    opset = [o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')][0]
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for value_info in model.graph.input:
        if value_info.name in feeds:
            values[value_info.name] = np.asarray(feeds[value_info.name])
        elif value_info.name not in values:
            raise KeyError('no value fed for graph input {!r}'.format(value_info.name))
    for node in model.graph.node:
        inputs = [values[name] if name else None for name in node.input]
        outputs = run_node(node, inputs, opset)
        for name, value in zip(node.output, outputs):
            if name:
                values[name] = value
    return {o.name: values[o.name] for o in model.graph.output}
