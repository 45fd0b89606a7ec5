"""The op table of doppio.onnx.frontend: one translator per Caffe2 op type,
each turning one OperatorDef into ONNX nodes.

A translator sees the op through an `OpView`: its inputs and outputs
already renamed to SSA names, its arguments, and the static shape and dtype
of every value it touches (the frontend runs the net once to learn them, as
Caffe2's frontend does). It appends nodes and constants to the
`ExportContext`. Caffe2 semantics that ONNX spells differently (FC's
flattening, legacy broadcasting, Softmax's 2-D coercion after opset 13,
Concat's split_info output) are rebuilt from plain ONNX ops, so the result
needs no custom domain.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


class Unsupported(ValueError):
    """An op, argument or value that has no ONNX equivalent here."""


# Caffe2's TensorProto.DataType -> ONNX's. BYTE (3) is deprecated in Caffe2
# and STRING has no use in an exported inference graph.
CAFFE2_TO_ONNX_DTYPE = {
    1: TensorProto.FLOAT, 2: TensorProto.INT32, 5: TensorProto.BOOL,
    6: TensorProto.UINT8, 7: TensorProto.INT8, 8: TensorProto.UINT16,
    9: TensorProto.INT16, 10: TensorProto.INT64, 12: TensorProto.FLOAT16,
    13: TensorProto.DOUBLE, 17: TensorProto.UINT32, 18: TensorProto.UINT64,
}
CAFFE2_DTYPE_NAMES = {
    'FLOAT': 1, 'INT32': 2, 'BYTE': 3, 'STRING': 4, 'BOOL': 5, 'UINT8': 6, 'INT8': 7,
    'UINT16': 8, 'INT16': 9, 'INT64': 10, 'FLOAT16': 12, 'DOUBLE': 13, 'UINT32': 17,
    'UINT64': 18,
}
NUMPY_TO_ONNX_DTYPE = {
    np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.int16): TensorProto.INT16, np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64, np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.bool_): TensorProto.BOOL,
    np.dtype(np.uint32): TensorProto.UINT32, np.dtype(np.uint64): TensorProto.UINT64,
}
ONNX_TO_NUMPY_DTYPE = {v: k for k, v in NUMPY_TO_ONNX_DTYPE.items()}


class ExportContext(object):
    """The graph under construction: nodes, constant initializers, fresh
    names, and the traced (dtype, shape) of every SSA value."""

    def __init__(self, opset, taken_names, value_types):
        self.opset = opset
        self.nodes = []
        self.constants = []
        self.value_types = value_types
        self._taken = set(taken_names)

    def fresh(self, hint):
        """A name no blob of either net and no earlier helper value uses."""
        name, k = hint, 0
        while name in self._taken:
            k += 1
            name = '{}__{}'.format(hint, k)
        self._taken.add(name)
        return name

    def node(self, op_type, inputs, outputs, **attrs):
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), **attrs))

    def temp(self, op_type, inputs, hint, **attrs):
        """A node with one fresh output; returns that output's name."""
        out = self.fresh(hint)
        self.node(op_type, inputs, [out], **attrs)
        return out

    def const(self, array, hint):
        name = self.fresh(hint)
        self.constants.append(numpy_helper.from_array(np.asarray(array), name=name))
        return name

    def shape(self, name):
        return self.value_types[name][1]

    def dtype(self, name):
        return self.value_types[name][0]

    def rank(self, name):
        return len(self.shape(name))

    def unsqueeze(self, value, axes, hint, output=None):
        """Unsqueeze's axes moved from an attribute to an input in opset 13."""
        output = output or self.fresh(hint)
        if self.opset >= 13:
            axes_input = self.const(np.array(axes, np.int64), hint + '_axes')
            self.node('Unsqueeze', [value, axes_input], [output])
        else:
            self.node('Unsqueeze', [value], [output], axes=list(axes))
        return output

    def reshape(self, value, dims, hint, output=None):
        shape = self.const(np.array(dims, np.int64), hint + '_shape')
        if output is None:
            return self.temp('Reshape', [value, shape], hint)
        self.node('Reshape', [value, shape], [output])
        return output


class OpView(object):
    """One Caffe2 op as a translator sees it."""

    def __init__(self, index, op_def, inputs, outputs, used_later):
        self.index = index
        self.op_def = op_def
        self.type = op_def.type
        self.inputs = inputs
        self.outputs = outputs
        self._used_later = used_later
        self._args = {a.name: a for a in op_def.arg}

    def describe(self):
        named = ' {!r}'.format(self.op_def.name) if self.op_def.name else ''
        return 'op #{}{} (type {})'.format(self.index, named, self.type)

    def fail(self, reason):
        raise Unsupported('doppio.onnx: cannot export {}: {}'.format(self.describe(), reason))

    def output_used(self, k):
        return k < len(self.outputs) and self.outputs[k] in self._used_later

    def has(self, name):
        return name in self._args

    def arg(self, name):
        """The Argument proto, for arguments of more than one type."""
        return self._args.get(name)

    def int_arg(self, name, default):
        arg = self._args.get(name)
        if arg is None:
            return default
        if not arg.HasField('i'):
            self.fail('argument {!r} must be an int'.format(name))
        return arg.i

    def float_arg(self, name, default):
        arg = self._args.get(name)
        if arg is None:
            return default
        if arg.HasField('f'):
            return arg.f
        if arg.HasField('i'):
            return float(arg.i)
        self.fail('argument {!r} must be a float'.format(name))

    def str_arg(self, name, default):
        arg = self._args.get(name)
        if arg is None:
            return default
        if not arg.HasField('s'):
            self.fail('argument {!r} must be a string'.format(name))
        return arg.s.decode('utf-8') if isinstance(arg.s, bytes) else arg.s

    def ints_arg(self, name, default):
        arg = self._args.get(name)
        if arg is None:
            return default
        return [int(v) for v in arg.ints]

    def require_nchw(self):
        order = self.str_arg('order', 'NCHW')
        if order != 'NCHW':
            self.fail('order {!r}: ONNX has only NCHW'.format(order))

    def axis(self, value, rank):
        """Maps a possibly negative axis onto [0, rank)."""
        if not -rank <= value < rank:
            self.fail('axis {} is out of range for rank {}'.format(value, rank))
        return value + rank if value < 0 else value


# ---- convolution and pooling ----

def _per_axis(op, scalar, repeated, per_axis_2d, count, default):
    """One ConvPoolOpBase argument in any of Caffe2's three spellings
    (kernel / kernels / kernel_h+kernel_w), expanded to `count` values."""
    forms = []
    if op.has(scalar):
        forms.append([op.int_arg(scalar, 0)] * count)
    if op.has(repeated):
        forms.append(op.ints_arg(repeated, []))
    present = [n for n in per_axis_2d if op.has(n)]
    if present:
        if len(present) != len(per_axis_2d):
            op.fail('give all of {} or none'.format(', '.join(per_axis_2d)))
        forms.append([op.int_arg(n, 0) for n in per_axis_2d])
    if len(forms) > 1:
        op.fail('give only one of {!r}, {!r} and {}'.format(scalar, repeated, per_axis_2d[0]))
    if not forms:
        return None if default is None else [default] * count
    if len(forms[0]) != count:
        op.fail('{} has {} values; the input needs {}'.format(scalar, len(forms[0]), count))
    return forms[0]


def _geometry(ctx, op, x, default_kernel, allow_caffe_legacy):
    """kernel_shape, strides, pads, dilations as ONNX wants them, from
    Caffe2's arguments and the static input shape; legacy padding modes
    become the explicit pads they amount to."""
    op.require_nchw()
    spatial = list(ctx.shape(x)[2:])
    n = len(spatial)
    kernel = _per_axis(op, 'kernel', 'kernels', ['kernel_h', 'kernel_w'], n, None)
    kernel = kernel or default_kernel
    if not kernel:
        op.fail('the kernel size is not set')
    strides = _per_axis(op, 'stride', 'strides', ['stride_h', 'stride_w'], n, 1)
    dilations = _per_axis(op, 'dilation', 'dilations', ['dilation_h', 'dilation_w'], n, 1)
    pads = _per_axis(op, 'pad', 'pads', ['pad_t', 'pad_l', 'pad_b', 'pad_r'], 2 * n, 0)
    legacy = op.int_arg('legacy_pad', 0)
    if legacy in (1, 2):
        pads = [0] * (2 * n)
        for i in range(n):
            if legacy == 2:
                target = -(-spatial[i] // strides[i])
                needed = max(0, (target - 1) * strides[i] + kernel[i] - spatial[i])
                pads[i], pads[n + i] = needed // 2, needed - needed // 2
    elif legacy == 3:
        if not allow_caffe_legacy:
            op.fail('legacy_pad 3 (CAFFE_LEGACY_POOLING) is exported for MaxPool only')
        for i in range(n):
            span = spatial[i] + 2 * pads[i] - kernel[i]
            size = -(-span // strides[i]) + 1
            if pads[i] > 0 and (size - 1) * strides[i] >= spatial[i] + pads[i]:
                size -= 1
            pads[n + i] = pads[i] + strides[i] * (size - (span // strides[i] + 1))
    elif legacy != 0:
        op.fail('unknown legacy_pad {}'.format(legacy))
    return dict(kernel_shape=list(kernel), strides=strides, pads=pads, dilations=dilations)


def conv(ctx, op):
    x, w = op.inputs[0], op.inputs[1]
    geometry = _geometry(ctx, op, x, list(ctx.shape(w)[2:]), allow_caffe_legacy=False)
    ctx.node('Conv', op.inputs, op.outputs[:1], group=op.int_arg('group', 1), **geometry)


def pool(ctx, op):
    x = op.inputs[0]
    kind = 'MaxPool' if op.type.startswith('MaxPool') else 'AveragePool'
    if op.int_arg('global_pooling', 0):
        op.require_nchw()
        ctx.node('Global' + kind, [x], op.outputs[:1])
        return
    geometry = _geometry(ctx, op, x, None, allow_caffe_legacy=kind == 'MaxPool')
    # Doppio's pooling refuses dilation (and ONNX's AveragePool lacks it
    # before opset 19).
    if any(d != 1 for d in geometry.pop('dilations')):
        op.fail('dilated pooling has no export')
    if kind == 'AveragePool':
        geometry['count_include_pad'] = op.int_arg('count_include_pad', 0)
    ctx.node(kind, [x], op.outputs[:1], **geometry)


def spatial_bn(ctx, op):
    if not op.int_arg('is_test', 0):
        op.fail('is_test=0 (training mode); export a test-mode net (is_test=1)')
    op.require_nchw()
    ctx.node('BatchNormalization', op.inputs[:5], op.outputs[:1],
             epsilon=op.float_arg('epsilon', 1e-5))


# ---- matrix products ----

def _as_matrix(ctx, value, axis, op, hint):
    """Caffe2's 2-D view of a tensor: dims before `axis` are the rows."""
    axis = op.axis(axis, ctx.rank(value))
    if ctx.rank(value) == 2 and axis == 1:
        return value
    return ctx.temp('Flatten', [value], hint, axis=axis)


def fc(ctx, op):
    x, w, b = op.inputs[:3]
    axis = op.axis(op.int_arg('axis', 1), ctx.rank(x))
    x2 = _as_matrix(ctx, x, axis, op, x + '_2d')
    w2 = _as_matrix(ctx, w, op.int_arg('axis_w', 1), op, w + '_2d')
    trans_b = 0 if op.type == 'FCTransposed' else 1
    out = op.outputs[0]
    if axis == 1:
        ctx.node('Gemm', [x2, w2, b], [out], transB=trans_b)
        return
    # Caffe2 keeps X's leading dims: [d0 .. d(axis-1), N].
    product = ctx.temp('Gemm', [x2, w2, b], out + '_2d', transB=trans_b)
    dims = list(ctx.shape(out))
    if axis > 1:
        dims[0] = -1
    ctx.reshape(product, dims, out, output=out)


def matmul(ctx, op):
    a, b = op.inputs[:2]
    a2 = _as_matrix(ctx, a, op.int_arg('axis_a', 1), op, a + '_2d')
    b2 = _as_matrix(ctx, b, op.int_arg('axis_b', 1), op, b + '_2d')
    if op.int_arg('trans_a', 0):
        a2 = ctx.temp('Transpose', [a2], a + '_t', perm=[1, 0])
    if op.int_arg('trans_b', 0):
        b2 = ctx.temp('Transpose', [b2], b + '_t', perm=[1, 0])
    ctx.node('MatMul', [a2, b2], op.outputs[:1])


def batch_matmul(ctx, op):
    inputs = list(op.inputs[:2])
    for k, flag in enumerate(('trans_a', 'trans_b')):
        if op.int_arg(flag, 0):
            rank = ctx.rank(inputs[k])
            if rank < 2:
                op.fail('{} needs at least 2 dims in {!r}'.format(flag, inputs[k]))
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            inputs[k] = ctx.temp('Transpose', [inputs[k]], inputs[k] + '_t', perm=perm)
    ctx.node('MatMul', inputs, op.outputs[:1])


# ---- elementwise ----

def simple(onnx_type, **defaults):
    """A translator for ops whose only arguments map one to one; `defaults`
    names each Caffe2 float argument and its Caffe2 default."""
    def translate(ctx, op):
        attrs = {name: op.float_arg(name, value) for name, value in defaults.items()}
        ctx.node(onnx_type, op.inputs, op.outputs[:1], **attrs)
    return translate


def identity(ctx, op):
    ctx.node('Identity', op.inputs[:1], op.outputs[:1])


def binary(ctx, op):
    a, b = op.inputs[:2]
    if op.int_arg('broadcast', 0):
        # Legacy broadcasting lines B up with A's dims starting at `axis`
        # (default: at the end); numpy lines up trailing dims, so B gets
        # trailing 1s for A's dims after its own.
        axis = op.int_arg('axis', -1)
        axis_str = op.str_arg('axis_str', '')
        if axis_str:
            order = op.str_arg('order', 'NCHW')
            if len(axis_str) != 1 or axis_str not in order:
                op.fail('axis_str {!r} is not one letter of order {!r}'.format(axis_str, order))
            axis = order.index(axis_str)
        trailing = 0 if axis == -1 else ctx.rank(a) - axis - ctx.rank(b)
        if trailing > 0:
            b = ctx.reshape(b, list(ctx.shape(b)) + [1] * trailing, b + '_aligned')
    ctx.node(op.type, [a, b], op.outputs[:1])


def scale(ctx, op):
    x = op.inputs[0]
    factor = ctx.const(np.array(op.float_arg('scale', 1.0), ctx.dtype(x)), 'scale')
    ctx.node('Mul', [x, factor], op.outputs[:1])


def clip(ctx, op):
    x = op.inputs[0]
    # Caffe2's defaults: the float range, i.e. no bound.
    low = op.float_arg('min', float(np.finfo(np.float32).min))
    high = op.float_arg('max', float(np.finfo(np.float32).max))
    if ctx.opset < 11:
        ctx.node('Clip', [x], op.outputs[:1], min=low, max=high)
        return
    bounds = [ctx.const(np.array(v, ctx.dtype(x)), 'clip_' + k)
              for k, v in (('min', low), ('max', high))]
    ctx.node('Clip', [x] + bounds, op.outputs[:1])


def cast(ctx, op):
    if not op.has('to'):
        op.fail("argument 'to' is required")
    to = op.arg('to')
    if to.HasField('s'):
        text = to.s.decode('utf-8') if isinstance(to.s, bytes) else to.s
        code = CAFFE2_DTYPE_NAMES.get(text.upper())
        if code is None:
            op.fail("argument 'to' is {!r}, not a TensorProto.DataType".format(text))
    else:
        code = op.int_arg('to', 0)
    if code not in CAFFE2_TO_ONNX_DTYPE:
        op.fail("cannot cast to Caffe2 data type {}".format(code))
    ctx.node('Cast', op.inputs[:1], op.outputs[:1], to=CAFFE2_TO_ONNX_DTYPE[code])


def softmax(ctx, op):
    x = op.inputs[0]
    rank = ctx.rank(x)
    axis = op.axis(op.int_arg('axis', 1), rank)
    # Caffe2 normalizes over all dims from `axis` on (ONNX before opset 13
    # too); from opset 13 ONNX normalizes over `axis` alone.
    if ctx.opset < 13 or axis == rank - 1:
        ctx.node(op.type, [x], op.outputs[:1], axis=axis)
        return
    flat = ctx.temp('Flatten', [x], x + '_2d', axis=axis)
    normalized = ctx.temp(op.type, [flat], op.outputs[0] + '_2d', axis=1)
    ctx.node('Reshape', [normalized, ctx.temp('Shape', [x], x + '_shape')], op.outputs[:1])


def dropout(ctx, op):
    if not op.int_arg('is_test', 0):
        op.fail('is_test=0 (training mode); export a test-mode net (is_test=1)')
    if op.output_used(1):
        op.fail("the mask output {!r} is read, but an exported net has no mask".format(
            op.op_def.output[1]))
    ctx.node('Identity', op.inputs[:1], op.outputs[:1])


# ---- shapes ----

def reshape(ctx, op):
    x = op.inputs[0]
    if len(op.inputs) > 1:
        shape = op.inputs[1]
        if ctx.dtype(shape) != np.int64:
            shape = ctx.temp('Cast', [shape], shape + '_int64', to=TensorProto.INT64)
    elif op.has('shape'):
        shape = ctx.const(np.array(op.ints_arg('shape', []), np.int64), 'new_shape')
    else:
        op.fail("give the new shape as argument 'shape' or as a second input")
    ctx.node('Reshape', [x, shape], op.outputs[:1])
    if len(op.outputs) > 1:
        old_shape = op.outputs[1]
        if ctx.dtype(old_shape) == np.int64:
            ctx.node('Shape', [x], [old_shape])
        else:
            ctx.node('Cast', [ctx.temp('Shape', [x], x + '_shape')], [old_shape],
                     to=NUMPY_TO_ONNX_DTYPE[ctx.dtype(old_shape)])


def flatten(ctx, op):
    ctx.node('Flatten', op.inputs[:1], op.outputs[:1], axis=op.int_arg('axis', 1))


def flatten_to_vec(ctx, op):
    ctx.reshape(op.inputs[0], [-1], op.outputs[0], output=op.outputs[0])


def transpose(ctx, op):
    attrs = {}
    if op.has('axes'):
        attrs['perm'] = op.ints_arg('axes', [])
    ctx.node('Transpose', op.inputs[:1], op.outputs[:1], **attrs)


def layout_switch(ctx, op):
    rank = ctx.rank(op.inputs[0])
    if op.type == 'NCHW2NHWC':
        perm = [0] + list(range(2, rank)) + [1]
    else:
        perm = [0, rank - 1] + list(range(1, rank - 1))
    ctx.node('Transpose', op.inputs[:1], op.outputs[:1], perm=perm)


def squeeze(ctx, op):
    dims = op.ints_arg('dims', None)
    if dims is None:
        op.fail("argument 'dims' is required")
    x, out = op.inputs[0], op.outputs[0]
    if op.type == 'ExpandDims':
        ctx.unsqueeze(x, sorted(set(dims)), out, output=out)
    elif ctx.opset >= 13:
        ctx.node('Squeeze', [x, ctx.const(np.array(dims, np.int64), 'axes')], [out])
    else:
        ctx.node('Squeeze', [x], [out], axes=dims)


def concat(ctx, op):
    if op.has('axis') and op.has('order'):
        op.fail("give either argument 'axis' or 'order', not both")
    add_axis = op.has('axis') and op.int_arg('add_axis', 0) != 0
    if op.has('axis'):
        axis = op.int_arg('axis', -1)
    else:
        order = op.str_arg('order', 'NCHW')
        if order not in ('NCHW', 'NHWC'):
            op.fail('order {!r} is not NCHW or NHWC'.format(order))
        axis = 1 if order == 'NCHW' else 3
    in_rank = ctx.rank(op.inputs[0])
    axis = op.axis(axis, in_rank + (1 if add_axis else 0))
    inputs = list(op.inputs)
    if add_axis:
        inputs = [ctx.unsqueeze(x, [axis], x + '_stacked') for x in inputs]
    ctx.node('Concat', inputs, op.outputs[:1], axis=axis)
    if len(op.outputs) > 1:
        sizes = [1 if add_axis else ctx.shape(x)[axis] for x in op.inputs]
        split_info = op.outputs[1]
        dtype = ctx.dtype(split_info)
        ctx.node('Identity', [ctx.const(np.array(sizes, dtype), 'split_info')], [split_info])


def sum_op(ctx, op):
    ctx.node('Sum', op.inputs, op.outputs[:1])


def variadic(onnx_type):
    def translate(ctx, op):
        ctx.node(onnx_type, op.inputs, op.outputs[:1])
    return translate


def shape(ctx, op):
    if op.has('axes'):
        op.fail("argument 'axes' has no ONNX equivalent before opset 15's start/end")
    ctx.node('Shape', op.inputs[:1], op.outputs[:1])


_IDENTITY_TYPES = ('Copy', 'Alias', 'StopGradient', 'EnsureCPUOutput', 'CopyFromCPUInput',
                   'CopyCPUToGPU', 'CopyGPUToCPU', 'CopyOnDeviceLike')

TRANSLATORS = dict(
    {name: conv for name in ('Conv', 'Conv1D', 'Conv2D', 'Conv3D')},
    **{name: pool for name in ('MaxPool', 'MaxPool1D', 'MaxPool2D', 'MaxPool3D',
                               'AveragePool', 'AveragePool1D', 'AveragePool2D',
                               'AveragePool3D')},
    **{name: identity for name in _IDENTITY_TYPES},
    **{name: binary for name in ('Add', 'Sub', 'Mul', 'Div')},
    **{name: simple(name) for name in ('Relu', 'Sigmoid', 'Tanh', 'Exp', 'Log', 'Sqrt',
                                       'Abs', 'Neg', 'Softplus')},
    SpatialBN=spatial_bn, FC=fc, FCTransposed=fc, MatMul=matmul, BatchMatMul=batch_matmul,
    LeakyRelu=simple('LeakyRelu', alpha=0.01), Elu=simple('Elu', alpha=1.0),
    Softmax=softmax, LogSoftmax=softmax, Dropout=dropout, Scale=scale, Clip=clip, Cast=cast,
    Reshape=reshape, Flatten=flatten, FlattenToVec=flatten_to_vec, Transpose=transpose,
    NCHW2NHWC=layout_switch, NHWC2NCHW=layout_switch, Squeeze=squeeze, ExpandDims=squeeze,
    Concat=concat, Sum=sum_op, Max=variadic('Max'), Min=variadic('Min'), Shape=shape,
)
