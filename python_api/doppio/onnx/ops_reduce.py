"""Converters of ONNX reductions: Reduce{Sum,Mean,Max,Min,L1,L2,SumSquare,
LogSum,LogSumExp}, ArgMax/ArgMin and Hardmax."""

import numpy as np

from doppio.onnx import common, tensors
from doppio.onnx.context import converts

# The opset from which each reduction takes its axes as input 1 instead of
# an attribute (ReduceSum moved at 13, the others at 18).
_AXES_INPUT_SINCE = {'ReduceSum': 13}
_REDUCTIONS = ('ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceL1', 'ReduceL2',
               'ReduceSumSquare', 'ReduceLogSum', 'ReduceLogSumExp')


def _reduce_args(ctx):
    """(axes, keepdims) for Doppio's Reduce ops, or None for "no reduction"
    (ReduceSum's noop_with_empty_axes with empty axes)."""
    since = _AXES_INPUT_SINCE.get(ctx.op_type, 18)
    keepdims = ctx.attrs.int('keepdims', 1)
    if ctx.opset < since:
        ctx.check_inputs(1)
        axes = ctx.attrs.ints('axes', None)
    else:
        ctx.check_inputs(1, 2)
        value = ctx.optional_static(1, 'axes')
        axes = None if value is None else common.int_list(ctx, value, 'axes')
        if ctx.attrs.int('noop_with_empty_axes', 0) and not axes:
            return None
    # Doppio reduces every dim when `axes` is empty, as ONNX without axes.
    return {'axes': axes or [], 'keepdims': keepdims}


@converts(*_REDUCTIONS)
def convert_reduce(ctx):
    ctx.check_outputs(1)
    x, out = ctx.input(0), ctx.output(0)
    args = _reduce_args(ctx)
    if args is None:
        ctx.op('Copy', [x], [out])
        return
    if args['axes']:
        rank = ctx.rank(x)
        args['axes'] = common.normalize_axes(ctx, args['axes'], rank)
    kind = ctx.op_type
    if kind in ('ReduceSum', 'ReduceMean', 'ReduceMax'):
        ctx.op(kind, [x], [out], **args)
    elif kind == 'ReduceMin':
        negated, reduced = ctx.temp('negated'), ctx.temp('reduced')
        ctx.op('Neg', [x], [negated])
        ctx.op('ReduceMax', [negated], [reduced], **args)
        ctx.op('Neg', [reduced], [out])
    elif kind == 'ReduceL1':
        magnitude = ctx.temp('abs')
        ctx.op('Abs', [x], [magnitude])
        ctx.op('ReduceSum', [magnitude], [out], **args)
    elif kind in ('ReduceL2', 'ReduceSumSquare'):
        square = ctx.temp('square')
        ctx.op('Mul', [x, x], [square])
        if kind == 'ReduceSumSquare':
            ctx.op('ReduceSum', [square], [out], **args)
        else:
            total = ctx.temp('sum')
            ctx.op('ReduceSum', [square], [total], **args)
            ctx.op('Sqrt', [total], [out])
    elif kind == 'ReduceLogSum':
        total = ctx.temp('sum')
        ctx.op('ReduceSum', [x], [total], **args)
        ctx.op('Log', [total], [out])
    else:
        # log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max, so
        # large inputs do not overflow.
        peak, kept_peak = ctx.temp('max'), ctx.temp('max_kept')
        ctx.op('ReduceMax', [x], [kept_peak], axes=args['axes'], keepdims=1)
        ctx.op('ReduceMax', [x], [peak], **args)
        shifted, exponent, total, log_total = (ctx.temp(h) for h in (
            'shifted', 'exp', 'sum', 'log_sum'))
        ctx.op('Sub', [x, kept_peak], [shifted])
        ctx.op('Exp', [shifted], [exponent])
        ctx.op('ReduceSum', [exponent], [total], **args)
        ctx.op('Log', [total], [log_total])
        ctx.op('Add', [log_total, peak], [out])


@converts('ArgMax', 'ArgMin')
def convert_arg_reduce(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    select_last = ctx.attrs.int('select_last_index', 0) if ctx.opset >= 12 else 0
    ctx.op(ctx.op_type, [ctx.input(0)], [ctx.output(0)], axis=ctx.attrs.int('axis', 0),
           keepdims=ctx.attrs.int('keepdims', 1), select_last_index=select_last)


@converts('Hardmax')
def convert_hardmax(ctx):
    # 1 where ArgMax along the axis points, else 0: the argmax compared with
    # the positions along that axis.
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    shape = ctx.static_shape(x)
    axis = common.normalize_axis(ctx, ctx.attrs.int('axis', 1 if ctx.opset < 13 else -1),
                                 len(shape))
    source, work_shape = x, list(shape)
    if ctx.opset < 13:
        # Before opset 13 the input is coerced to 2-D at `axis`.
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        work_shape = [rows, int(np.prod(shape[axis:], dtype=np.int64))]
        source = common.reshape(ctx, x, work_shape, hint='matrix')
        ctx.record_shape(source, work_shape, ctx.dtype(x))
        axis = 1
    index, hits = ctx.temp('argmax'), ctx.temp('hits')
    ctx.op('ArgMax', [source], [index], axis=axis, keepdims=1)
    positions = np.arange(work_shape[axis], dtype=np.int64).reshape(
        [-1 if d == axis else 1 for d in range(len(work_shape))])
    ctx.op('EQ', [index, ctx.constant(positions, 'positions')], [hits])
    target = ctx.output(0) if ctx.opset >= 13 else ctx.temp('hardmax')
    ctx.op('Cast', [hits], [target], to=tensors.doppio_type_of_numpy(ctx.float_dtype(x),
                                                                     ctx.where))
    if ctx.opset < 13:
        common.reshape(ctx, target, shape, ctx.output(0))
