"""Converters of ONNX elementwise ops: math, activations, comparisons,
logic, Clip, Where and the variadic Sum/Max/Min/Mean."""

import numpy as np

from doppio.onnx import common, tensors
from doppio.onnx.context import converts

# ONNX ops that are one Doppio op of the same meaning, without attributes.
_UNARY = {
    'Relu': 'Relu', 'Sigmoid': 'Sigmoid', 'Tanh': 'Tanh', 'Exp': 'Exp', 'Log': 'Log',
    'Sqrt': 'Sqrt', 'Abs': 'Abs', 'Neg': 'Neg', 'Softplus': 'Softplus', 'Not': 'Not',
    'Sin': 'Sin', 'Cos': 'Cos', 'Tan': 'Tan', 'Asin': 'Asin', 'Acos': 'Acos',
    'Atan': 'Atan', 'Sinh': 'Sinh', 'Cosh': 'Cosh', 'Asinh': 'Asinh', 'Acosh': 'Acosh',
    'Atanh': 'Atanh', 'Erf': 'Erf', 'Floor': 'Floor', 'Ceil': 'Ceil', 'Round': 'Round',
    'Sign': 'Sign', 'Identity': 'Copy',
}

_BINARY = {
    'Add': 'Add', 'Sub': 'Sub', 'Mul': 'Mul', 'Div': 'Div',
    'Equal': 'EQ', 'Greater': 'GT', 'Less': 'LT', 'GreaterOrEqual': 'GE',
    'LessOrEqual': 'LE', 'And': 'And', 'Or': 'Or', 'Xor': 'Xor',
}


@converts(*_UNARY)
def convert_unary(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op(_UNARY[ctx.op_type], [ctx.input(0)], [ctx.output(0)])


def _legacy_broadcast_args(ctx):
    """Before opset 7, binary ops broadcast only with broadcast=1, Caffe2's
    legacy rule (B matches a run of A's dims from `axis`), which Doppio's
    ops implement under the same argument names."""
    if ctx.opset >= 7:
        return {}
    if not ctx.attrs.int('broadcast', 0):
        ctx.attrs.ignore('axis')
        return {}
    args = {'broadcast': 1}
    axis = ctx.attrs.int('axis', None)
    if axis is not None:
        args['axis'] = axis
    return args


@converts(*_BINARY)
def convert_binary(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    ctx.op(_BINARY[ctx.op_type], [ctx.input(0), ctx.input(1)], [ctx.output(0)],
           **_legacy_broadcast_args(ctx))


@converts('Pow')
def convert_pow(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    base, exponent = ctx.input(0), ctx.input(1)
    out = ctx.output(0)
    legacy = _legacy_broadcast_args(ctx)
    # The result has the base's type (the exponent's may differ since opset
    # 12). Doppio's Pow takes floats: integer powers go through float64,
    # exact for the integers float64 holds.
    base_dtype = ctx.dtype(base)
    if base_dtype is not None and base_dtype.kind in 'iu':
        result, out = out, ctx.temp('float_power')
        base = common.cast_to(ctx, base, np.float64, 'float_base')
        compute_dtype = np.dtype(np.float64)
    else:
        result, compute_dtype = None, base_dtype
    if compute_dtype is not None:
        exponent = common.cast_to(ctx, exponent, compute_dtype, 'exponent')
    value = ctx.static_value(ctx.input(1))
    base_shape = ctx.shape(base)
    if (value is not None and value.size == 1 and base_shape is not None
            and len(base_shape) >= value.ndim):
        ctx.op('Pow', [base], [out], exponent=float(value.reshape(-1)[0]))
    elif legacy:
        ctx.op('Pow', [base, exponent], [out], **legacy)
    else:
        base, exponent = common.same_shape_inputs(ctx, [base, exponent], 'pow_operand')
        ctx.op('Pow', [base, exponent], [out])
    if result is not None:
        ctx.op('Cast', [out], [result],
               to=tensors.doppio_type_of_numpy(base_dtype, ctx.where))


@converts('Sum', 'Max', 'Min', 'Mean')
def convert_variadic(ctx):
    inputs = ctx.inputs()
    if not inputs:
        raise ctx.invalid('takes at least one input')
    ctx.check_outputs(1)
    out = ctx.output(0)
    if len(inputs) == 1:
        ctx.op('Copy', inputs, [out])
        return
    shapes = [ctx.shape(n) for n in inputs]
    if ctx.op_type in ('Sum', 'Mean') and not (
            shapes[0] is not None and None not in shapes[0] and len(set(shapes)) == 1):
        # Add broadcasts, so a chain needs no static shapes.
        total = inputs[0]
        for index, name in enumerate(inputs[1:]):
            last = index == len(inputs) - 2
            target = out if last and ctx.op_type == 'Sum' else ctx.temp('partial_sum')
            ctx.op('Add', [total, name], [target])
            total = target
    else:
        operands = common.same_shape_inputs(ctx, inputs)
        doppio_type = {'Max': 'Max', 'Min': 'Min'}.get(ctx.op_type, 'Sum')
        total = out if ctx.op_type != 'Mean' else ctx.temp('sum')
        ctx.op(doppio_type, operands, [total])
    if ctx.op_type == 'Mean':
        ctx.op('Scale', [total], [out], scale=1.0 / len(inputs))


@converts('Elu')
def convert_elu(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op('Elu', [ctx.input(0)], [ctx.output(0)], alpha=ctx.attrs.float('alpha', 1.0))


@converts('LeakyRelu')
def convert_leaky_relu(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op('LeakyRelu', [ctx.input(0)], [ctx.output(0)],
           alpha=ctx.attrs.float('alpha', 0.01))


@converts('Selu')
def convert_selu(ctx):
    # selu(x) = gamma * elu(x, alpha)
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    alpha = ctx.attrs.float('alpha', 1.67326319217681884765625)
    gamma = ctx.attrs.float('gamma', 1.05070102214813232421875)
    elu = ctx.temp('elu')
    ctx.op('Elu', [ctx.input(0)], [elu], alpha=alpha)
    ctx.op('Scale', [elu], [ctx.output(0)], scale=gamma)


@converts('Celu')
def convert_celu(ctx):
    # celu(x) = alpha * elu(x / alpha, 1)
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    alpha = ctx.attrs.float('alpha', 1.0)
    if alpha == 0:
        raise ctx.invalid('alpha must not be 0')
    scaled, elu = ctx.temp('scaled'), ctx.temp('elu')
    ctx.op('Scale', [ctx.input(0)], [scaled], scale=1.0 / alpha)
    ctx.op('Elu', [scaled], [elu], alpha=1.0)
    ctx.op('Scale', [elu], [ctx.output(0)], scale=alpha)


@converts('HardSigmoid')
def convert_hard_sigmoid(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op('HardSigmoid', [ctx.input(0)], [ctx.output(0)], alpha=ctx.attrs.float('alpha', 0.2),
           beta=ctx.attrs.float('beta', 0.5))


@converts('HardSwish')
def convert_hard_swish(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op('HardSwish', [ctx.input(0)], [ctx.output(0)])


@converts('Softsign')
def convert_softsign(ctx):
    # x / (1 + |x|)
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    magnitude, denominator = ctx.temp('abs'), ctx.temp('denominator')
    ctx.op('Abs', [x], [magnitude])
    ctx.op('Add', [magnitude, ctx.scalar_like(1.0, x, 'one')], [denominator])
    ctx.op('Div', [x, denominator], [ctx.output(0)])


@converts('Reciprocal')
def convert_reciprocal(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    ctx.op('Div', [ctx.scalar_like(1.0, x, 'one'), x], [ctx.output(0)])


@converts('ThresholdedRelu')
def convert_thresholded_relu(ctx):
    # x where x > alpha, else 0
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    above = ctx.temp('above')
    ctx.op('GT', [x, ctx.scalar_like(ctx.attrs.float('alpha', 1.0), x, 'alpha')], [above])
    ctx.op('Where', [above, x, ctx.scalar_like(0.0, x, 'zero')], [ctx.output(0)])


@converts('Shrink')
def convert_shrink(ctx):
    # x - bias where x > lambd, x + bias where x < -lambd, else 0
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    bias = ctx.attrs.float('bias', 0.0)
    lambd = ctx.attrs.float('lambd', 0.5)
    above, below = ctx.temp('above'), ctx.temp('below')
    ctx.op('GT', [x, ctx.scalar_like(lambd, x, 'lambd')], [above])
    ctx.op('LT', [x, ctx.scalar_like(-lambd, x, 'minus_lambd')], [below])
    lowered, raised, inner = ctx.temp('lowered'), ctx.temp('raised'), ctx.temp('inner')
    ctx.op('Sub', [x, ctx.scalar_like(bias, x, 'bias')], [lowered])
    ctx.op('Add', [x, ctx.scalar_like(bias, x, 'bias')], [raised])
    ctx.op('Where', [below, raised, ctx.scalar_like(0, x, 'zero')], [inner])
    ctx.op('Where', [above, lowered, inner], [ctx.output(0)])


@converts('Clip')
def convert_clip(ctx):
    ctx.check_inputs(1, 1 if ctx.opset < 11 else 3)
    ctx.check_outputs(1)
    if ctx.opset < 11:
        low = ctx.attrs.float('min', float('-inf'))
        high = ctx.attrs.float('max', float('inf'))
    else:
        low_value = ctx.optional_static(1, 'min')
        high_value = ctx.optional_static(2, 'max')
        low = float('-inf') if low_value is None else common.scalar_float(ctx, low_value, 'min')
        high = float('inf') if high_value is None else common.scalar_float(
            ctx, high_value, 'max')
    # ONNX: with min > max every element becomes max.
    low = min(low, high)
    dtype = ctx.dtype(ctx.input(0))
    if dtype is not None and dtype.kind in 'iu':
        _clip_integers(ctx, low, high)
    elif dtype is not None and dtype.kind != 'f':
        raise ctx.unsupported('Clip of {} is not supported'.format(dtype))
    else:
        ctx.op('Clip', [ctx.input(0)], [ctx.output(0)], min=low, max=high)


def _clip_integers(ctx, low, high):
    """Clip of an integer tensor as Max with the low bound, then Min with the
    high one (Doppio's Clip op takes floats; integers compare exactly)."""
    x = ctx.input(0)
    bounds = [('Max', low), ('Min', high)]
    bounds = [(op, bound) for op, bound in bounds if np.isfinite(bound)]
    if not bounds:
        ctx.op('Copy', [x], [ctx.output(0)])
        return
    current = x
    for index, (op_type, bound) in enumerate(bounds):
        target = ctx.output(0) if index == len(bounds) - 1 else ctx.temp('clipped')
        operands = common.same_shape_inputs(ctx, [current, ctx.scalar_like(int(bound), x, 'bound')])
        ctx.op(op_type, operands, [target])
        ctx.record_shape(target, ctx.shape(x), ctx.dtype(x))
        current = target


@converts('IsNaN')
def convert_isnan(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    ctx.op('NE', [x, x], [ctx.output(0)])


@converts('IsInf')
def convert_isinf(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    positive = ctx.attrs.int('detect_positive', 1)
    negative = ctx.attrs.int('detect_negative', 1)
    if positive and negative:
        magnitude = ctx.temp('abs')
        ctx.op('Abs', [x], [magnitude])
        ctx.op('EQ', [magnitude, ctx.scalar_like(np.inf, x, 'inf')], [ctx.output(0)])
    elif positive or negative:
        infinity = np.inf if positive else -np.inf
        ctx.op('EQ', [x, ctx.scalar_like(infinity, x, 'inf')], [ctx.output(0)])
    else:
        ctx.op('ConstantFill', [x], [ctx.output(0)], value=0, dtype=5)  # all false (BOOL)


@converts('Where')
def convert_where(ctx):
    ctx.check_inputs(3)
    ctx.check_outputs(1)
    ctx.op('Where', [ctx.input(0), ctx.input(1), ctx.input(2)], [ctx.output(0)])
