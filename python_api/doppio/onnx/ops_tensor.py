"""Converters of ONNX ops that move, select or make tensors: Reshape,
Flatten, Transpose, Concat, Split, Squeeze, Unsqueeze, Gather, Slice, Shape,
Size, Cast, Constant, ConstantOfShape, Expand, Tile, Pad, Range, EyeLike, Trilu,
DepthToSpace, SpaceToDepth."""

import numpy as np

from doppio.onnx import common, tensors
from doppio.onnx.context import converts


@converts('Reshape')
def convert_reshape(ctx):
    ctx.check_outputs(1)
    x, out = ctx.input(0), ctx.output(0)
    allow_zero = ctx.attrs.int('allowzero', 0) if ctx.opset >= 14 else 0
    if ctx.opset < 5:
        shape = ctx.attrs.ints('shape', None)
    else:
        ctx.check_inputs(2)
        shape = ctx.static_value(ctx.input(1))
        if shape is None and not allow_zero:
            # Doppio's Reshape reads the shape tensor at run time; 0 and -1
            # mean what they mean in ONNX (without allowzero).
            ctx.op('Reshape', [x, ctx.input(1)], [out, ctx.temp('old_shape')])
            return
        if shape is None:
            shape = ctx.static(1, 'shape')
        shape = common.int_list(ctx, shape, 'shape')
    if shape is None:
        raise ctx.invalid('no shape given')
    if allow_zero and 0 in shape:
        if -1 in shape:
            raise ctx.invalid('allowzero=1 with both 0 and -1 in shape {}'.format(shape))
        # A literal 0 dim: the input must be empty, and the output is too.
        ctx.op('ConstantFill', [], [out], shape=shape,
               dtype=tensors.doppio_type_of_numpy(ctx.float_dtype(x), ctx.where))
        return
    common.reshape(ctx, x, shape, out)


@converts('Flatten')
def convert_flatten(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    ctx.op('Flatten', [ctx.input(0)], [ctx.output(0)], axis=ctx.attrs.int('axis', 1))


@converts('Transpose')
def convert_transpose(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    perm = ctx.attrs.ints('perm', None)
    if perm is None:
        ctx.op('Transpose', [ctx.input(0)], [ctx.output(0)])  # reverses the dims
        return
    if sorted(perm) != list(range(len(perm))):
        raise ctx.invalid('perm {} is not a permutation'.format(perm))
    common.transpose(ctx, ctx.input(0), perm, ctx.output(0))


@converts('Concat')
def convert_concat(ctx):
    ctx.check_outputs(1)
    inputs = ctx.inputs()
    if not inputs:
        raise ctx.invalid('takes at least one input')
    axis = ctx.attrs.int('axis', 1 if ctx.opset < 4 else None)
    if axis is None:
        raise ctx.invalid('attribute axis is required')
    ctx.op('Concat', inputs, [ctx.output(0), ctx.temp('split_info')], axis=axis)


@converts('Split')
def convert_split(ctx):
    ctx.check_inputs(1, 1 if ctx.opset < 13 else 2)
    outputs = [ctx.output(i) for i in range(ctx.num_outputs)]
    if not outputs:
        raise ctx.invalid('has no outputs')
    if ctx.opset < 13:
        split = ctx.attrs.ints('split', None)
    else:
        value = ctx.optional_static(1, 'split')
        split = None if value is None else common.int_list(ctx, value, 'split')
    axis = ctx.attrs.int('axis', 0)
    args = {'axis': axis}
    if split is not None:
        if len(split) != len(outputs) or any(s < 0 for s in split):
            raise ctx.invalid('split {} does not give {} non-negative sizes'.format(
                split, len(outputs)))
        args['split'] = split
    ctx.op('Split', [ctx.input(0)], outputs, **args)


def _axes(ctx, attribute_until, what='axes'):
    """An `axes` attribute before opset `attribute_until`, else input 1."""
    if ctx.opset < attribute_until:
        return ctx.attrs.ints(what, None)
    value = ctx.optional_static(1, what)
    return None if value is None else common.int_list(ctx, value, what)


@converts('Squeeze')
def convert_squeeze(ctx):
    ctx.check_inputs(1, 1 if ctx.opset < 13 else 2)
    ctx.check_outputs(1)
    x = ctx.input(0)
    axes = _axes(ctx, 13)
    if axes is None:
        shape = ctx.static_shape(x)
        axes = [d for d, size in enumerate(shape) if size == 1]
    else:
        axes = common.normalize_axes(ctx, axes, ctx.rank(x))
    if not axes:
        ctx.op('Copy', [x], [ctx.output(0)])
        return
    ctx.op('Squeeze', [x], [ctx.output(0)], dims=sorted(axes))


@converts('Unsqueeze')
def convert_unsqueeze(ctx):
    ctx.check_inputs(1, 1 if ctx.opset < 13 else 2)
    ctx.check_outputs(1)
    x = ctx.input(0)
    axes = _axes(ctx, 13)
    if axes is None:
        raise ctx.invalid('axes are required')
    # Axes index the output, whose rank counts the new dims.
    if any(a < 0 for a in axes):
        axes = common.normalize_axes(ctx, axes, ctx.rank(x) + len(axes))
    elif len(set(axes)) != len(axes):
        raise ctx.invalid('axes {} repeat an axis'.format(axes))
    ctx.op('ExpandDims', [x], [ctx.output(0)], dims=sorted(axes))


@converts('Gather')
def convert_gather(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    data, indices, out = ctx.input(0), ctx.input(1), ctx.output(0)
    axis = ctx.attrs.int('axis', 0)
    constant = ctx.static_value(indices)
    if constant is not None and (constant < 0).any():
        # Negative indices count from the end: resolve them now.
        size = ctx.static_shape(data)[common.normalize_axis(ctx, axis, ctx.rank(data))]
        indices = ctx.constant(np.where(constant < 0, constant + size, constant), 'indices')
    gather_axis(ctx, data, indices, axis, out)


@converts('GatherElements')
def convert_gather_elements(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    data, indices = ctx.input(0), ctx.input(1)
    axis = ctx.attrs.int('axis', 0)
    ctx.op('GatherElements', [data, indices], [ctx.output(0)], axis=axis)


def gather_axis(ctx, data, indices, axis, out):
    """ONNX Gather of `indices` along `axis` of `data` into `out`."""
    # ONNX's indices may be negative (from the end): Gather's wrap_indices.
    if axis == 0:
        ctx.op('Gather', [data, indices], [out], wrap_indices=1)
        return
    # Doppio gathers along the first axis: move `axis` there and back.
    rank = ctx.rank(data)
    axis = common.normalize_axis(ctx, axis, rank)
    index_rank = ctx.rank(indices)
    perm = [axis] + [d for d in range(rank) if d != axis]
    moved, gathered = ctx.temp('moved'), ctx.temp('gathered')
    common.transpose(ctx, data, perm, moved)
    ctx.op('Gather', [moved, indices], [gathered], wrap_indices=1)
    # gathered: indices dims, then data dims without `axis` in order.
    rest = list(range(index_rank, index_rank + rank - 1))
    back = rest[:axis] + list(range(index_rank)) + rest[axis:]
    common.transpose(ctx, gathered, back, out)


@converts('Slice')
def convert_slice(ctx):
    ctx.check_outputs(1)
    x = ctx.input(0)
    if ctx.opset < 10:
        ctx.check_inputs(1)
        starts = ctx.attrs.ints('starts', None)
        ends = ctx.attrs.ints('ends', None)
        axes = ctx.attrs.ints('axes', None)
        steps = None
        if starts is None or ends is None:
            raise ctx.invalid('attributes starts and ends are required')
    else:
        ctx.check_inputs(3, 5)
        starts = common.int_list(ctx, ctx.static(1, 'starts'), 'starts')
        ends = common.int_list(ctx, ctx.static(2, 'ends'), 'ends')
        axes_value = ctx.optional_static(3, 'axes')
        axes = None if axes_value is None else common.int_list(ctx, axes_value, 'axes')
        steps_value = ctx.optional_static(4, 'steps')
        steps = None if steps_value is None else common.int_list(ctx, steps_value, 'steps')
    if len(starts) != len(ends):
        raise ctx.invalid('starts {} and ends {} differ in length'.format(starts, ends))
    if axes is None:
        axes = list(range(len(starts)))
    if len(axes) != len(starts) or (steps is not None and len(steps) != len(starts)):
        raise ctx.invalid('starts, ends, axes and steps differ in length')
    if steps is None:
        steps = [1] * len(starts)
    if any(step == 0 for step in steps):
        raise ctx.invalid('steps must not be 0, got {}'.format(steps))
    shape = ctx.static_shape(x)
    axes = common.normalize_axes(ctx, axes, len(shape))
    # ONNX clamps the bounds as numpy slicing does; Python's slice.indices
    # resolves them against the known shape.
    ranges = {axis: range(*slice(start, stop, step).indices(shape[axis]))
              for axis, start, stop, step in zip(axes, starts, ends, steps)}
    strided = [axis for axis, r in ranges.items() if r.step != 1 and len(r) > 1]
    if not strided:
        # Doppio's Slice takes [start, end) for the leading dims.
        begin = [0] * len(shape)
        end = list(shape)
        for axis, r in ranges.items():
            begin[axis] = r.start if len(r) else 0
            end[axis] = r.start + len(r) if len(r) else 0
        last = max([a + 1 for a in axes] or [0])
        ctx.op('Slice', [x], [ctx.output(0)], starts=begin[:last], ends=end[:last])
        return
    # Other steps: each axis is a gather of the rows it keeps.
    current = x
    current_shape = list(shape)
    for index, axis in enumerate(sorted(ranges)):
        out = ctx.output(0) if index == len(ranges) - 1 else ctx.temp('sliced')
        rows = ctx.constant(np.array(list(ranges[axis]), dtype=np.int64), 'rows')
        gather_axis(ctx, current, rows, axis, out)
        current_shape[axis] = len(ranges[axis])
        ctx.record_shape(out, current_shape, ctx.dtype(x))
        current = out


@converts('Shape')
def convert_shape(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    start = ctx.attrs.int('start', 0) if ctx.opset >= 15 else 0
    end = ctx.attrs.int('end', None) if ctx.opset >= 15 else None
    if start == 0 and end is None:
        ctx.op('Shape', [x], [ctx.output(0)])
        return
    rank = ctx.rank(x)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else end
    end = min(max(end + rank if end < 0 else end, 0), rank)
    if end <= start:
        ctx.set_constant(ctx.output(0), np.zeros((0,), dtype=np.int64))
        return
    ctx.op('Shape', [x], [ctx.output(0)], axes=list(range(start, end)))


@converts('Size')
def convert_size(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    shape = ctx.static_shape(ctx.input(0))
    ctx.set_constant(ctx.output(0), np.array(int(np.prod(shape, dtype=np.int64)),
                                             dtype=np.int64))


@converts('Cast', 'CastLike')
def convert_cast(ctx):
    ctx.check_outputs(1)
    if ctx.op_type == 'CastLike':
        ctx.check_inputs(2)
        dtype = ctx.dtype(ctx.input(1))
        if dtype is None:
            raise ctx.unsupported('the element type of {!r} is not known'.format(
                ctx.input(1)))
        ctx.attrs.ignore('saturate')
    else:
        ctx.check_inputs(1)
        if ctx.opset < 6:
            raise ctx.unsupported('Cast before opset 6 (type names) is not supported')
        to = ctx.attrs.int('to', None)
        if to is None:
            raise ctx.invalid('attribute to is required')
        dtype = tensors.numpy_dtype(to, ctx.where)
    args = {'to': tensors.doppio_type_of_numpy(dtype, ctx.where)}
    if dtype == np.dtype(object):
        args['shortest_strings'] = 1  # ONNX's text is numpy's str, not std::to_string's
    ctx.op('Cast', [ctx.input(0)], [ctx.output(0)], **args)


@converts('Constant')
def convert_constant(ctx):
    ctx.check_inputs(0)
    ctx.check_outputs(1)
    value = ctx.attrs.tensor('value')
    forms = {'value_float': (ctx.attrs.float, np.float32),
             'value_floats': (ctx.attrs.floats, np.float32),
             'value_int': (ctx.attrs.int, np.int64),
             'value_ints': (ctx.attrs.ints, np.int64)}
    for name, (read, dtype) in forms.items():
        given = read(name, None)
        if given is not None:
            if value is not None:
                raise ctx.invalid('gives more than one value attribute')
            value = np.array(given, dtype=dtype)
    if ctx.attrs.has('sparse_value') or ctx.attrs.has('value_string') or ctx.attrs.has(
            'value_strings'):
        raise ctx.unsupported('sparse and string constants are not supported')
    if value is None:
        raise ctx.invalid('has no value attribute')
    ctx.set_constant(ctx.output(0), value)


@converts('ConstantOfShape')
def convert_constant_of_shape(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    value = ctx.attrs.tensor('value')
    if value is None:
        value = np.zeros((1,), dtype=np.float32)
    if value.size != 1:
        raise ctx.invalid('attribute value must hold one element')
    dtype = value.dtype
    c2_type = tensors.doppio_type_of_numpy(dtype, ctx.where)
    scalar = value.reshape(-1)[0].item()
    fill_value = float(scalar) if dtype.kind == 'f' else int(scalar)
    shape = ctx.static_value(ctx.input(0))
    if shape is not None:
        shape = common.int_list(ctx, shape, 'input')
        common.check_size(ctx, shape, 'the output')
        ctx.set_constant(ctx.output(0), np.full(shape, scalar, dtype=dtype))
        return
    ctx.op('ConstantFill', [ctx.input(0)], [ctx.output(0)], input_as_shape=1,
           value=fill_value, dtype=c2_type)


@converts('Expand')
def convert_expand(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    ctx.op('Expand', [ctx.input(0), ctx.input(1)], [ctx.output(0)])


@converts('Tile')
def convert_tile(ctx):
    # x of shape [d0, d1 ...] -> [1, d0, 1, d1 ...] -> expand to
    # [r0, d0, r1, d1 ...] -> [r0 * d0, r1 * d1 ...]
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    x = ctx.input(0)
    repeats = common.int_list(ctx, ctx.static(1, 'repeats'), 'repeats')
    shape = ctx.static_shape(x)
    if len(repeats) != len(shape) or any(r < 0 for r in repeats):
        raise ctx.invalid('repeats {} do not fit an input of shape {}'.format(repeats, shape))
    common.check_size(ctx, [r * d for r, d in zip(repeats, shape)], 'the output')
    interleaved = [v for d in shape for v in (1, d)]
    expanded = [v for r, d in zip(repeats, shape) for v in (r, d)]
    spread = common.reshape(ctx, x, interleaved, hint='interleaved')
    ctx.record_shape(spread, interleaved, ctx.dtype(x))
    stretched = common.expand_to(ctx, spread, expanded, 'tiled')
    common.reshape(ctx, stretched, [r * d for r, d in zip(repeats, shape)], ctx.output(0))


@converts('Pad')
def convert_pad(ctx):
    ctx.check_outputs(1)
    x = ctx.input(0)
    mode = ctx.attrs.string('mode', 'constant')
    if ctx.opset < 11:
        ctx.check_inputs(1)
        pads = ctx.attrs.ints('pads', ctx.attrs.ints('paddings', None))
        value = ctx.attrs.float('value', 0.0)
    else:
        ctx.check_inputs(2, 3)
        pads = common.int_list(ctx, ctx.static(1, 'pads'), 'pads')
        constant = ctx.optional_static(2, 'constant_value')
        value = 0.0 if constant is None else common.scalar_float(ctx, constant,
                                                                 'constant_value')
    if mode not in ('constant', 'reflect', 'edge'):
        raise ctx.invalid('unknown mode {!r}'.format(mode))
    shape = list(ctx.static_shape(x))
    rank = len(shape)
    if pads is None or len(pads) != 2 * rank:
        raise ctx.invalid('pads {} do not give two values per dim of rank {}'.format(
            pads, rank))
    if any(p < 0 for p in pads):
        raise ctx.unsupported('negative pads (cropping) are not supported')
    padded_axes = [a for a in range(rank) if pads[a] or pads[rank + a]]
    if not padded_axes:
        ctx.op('Copy', [x], [ctx.output(0)])
        return
    current = x
    for axis in padded_axes:
        before, after = pads[axis], pads[rank + axis]
        out = ctx.output(0) if axis == padded_axes[-1] else ctx.temp('padded')
        if mode == 'constant':
            _pad_constant(ctx, current, shape, axis, before, after, value, out)
        else:
            # reflect / edge: every output row is some input row, gathered.
            positions = np.arange(-before, shape[axis] + after)
            if mode == 'edge':
                positions = np.clip(positions, 0, shape[axis] - 1)
            else:
                if shape[axis] < 2 or max(before, after) >= shape[axis]:
                    raise ctx.invalid('reflect pads {} need a dim larger than them, got {}'
                                      .format((before, after), shape[axis]))
                period = 2 * (shape[axis] - 1)
                positions = np.abs(positions) % period
                positions = np.where(positions >= shape[axis], period - positions, positions)
            indices = ctx.constant(positions.astype(np.int64), 'pad_rows')
            gather_axis(ctx, current, indices, axis, out)
        shape[axis] += before + after
        ctx.record_shape(out, shape, ctx.dtype(x))
        current = out


def _pad_constant(ctx, x, shape, axis, before, after, value, out):
    dtype = ctx.float_dtype(x)
    parts = []
    for count, hint in ((before, 'pad_before'), (None, None), (after, 'pad_after')):
        if hint is None:
            parts.append(x)
        elif count:
            block_shape = shape[:axis] + [count] + shape[axis + 1:]
            parts.append(ctx.constant(np.full(block_shape, value, dtype), hint))
    ctx.op('Concat', parts, [out, ctx.temp('split_info')], axis=axis)


@converts('Range')
def convert_range(ctx):
    ctx.check_inputs(3)
    ctx.check_outputs(1)
    start, limit, delta = (ctx.static(i, what) for i, what in enumerate(
        ('start', 'limit', 'delta')))
    dtype = np.asarray(start).dtype
    step = np.asarray(delta).reshape(-1)[0]
    if step == 0:
        raise ctx.invalid('delta must not be 0')
    first, stop = np.asarray(start).reshape(-1)[0], np.asarray(limit).reshape(-1)[0]
    count = max(int(np.ceil((stop - first) / step)), 0)
    common.check_size(ctx, [count], 'the output')
    ctx.set_constant(ctx.output(0), (first + np.arange(count) * step).astype(dtype))


@converts('EyeLike')
def convert_eye_like(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    shape = ctx.static_shape(ctx.input(0))
    if len(shape) != 2:
        raise ctx.invalid('the input must be 2-D, got shape {}'.format(shape))
    common.check_size(ctx, shape, 'the output')
    to = ctx.attrs.int('dtype', None)
    dtype = ctx.float_dtype(ctx.input(0)) if to is None else tensors.numpy_dtype(to, ctx.where)
    ctx.set_constant(ctx.output(0), np.eye(shape[0], shape[1], k=ctx.attrs.int('k', 0),
                                           dtype=dtype))


@converts('DepthToSpace', 'SpaceToDepth')
def convert_depth_space(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    block = ctx.attrs.int('blocksize', None)
    if block is None or block <= 0:
        raise ctx.invalid('attribute blocksize is required and must be positive')
    n, c, h, w = _nchw(ctx, x)
    if ctx.op_type == 'DepthToSpace':
        mode = ctx.attrs.string('mode', 'DCR') if ctx.opset >= 11 else 'DCR'
        if c % (block * block):
            raise ctx.invalid('channels {} do not divide by blocksize^2'.format(c))
        depth = c // (block * block)
        if mode == 'DCR':
            split, perm = [n, block, block, depth, h, w], [0, 3, 4, 1, 5, 2]
        elif mode == 'CRD':
            split, perm = [n, depth, block, block, h, w], [0, 1, 4, 2, 5, 3]
        else:
            raise ctx.invalid('unknown mode {!r}'.format(mode))
        final = [n, depth, h * block, w * block]
    else:
        if h % block or w % block:
            raise ctx.invalid('spatial size {}x{} does not divide by blocksize'.format(h, w))
        split, perm = [n, c, h // block, block, w // block, block], [0, 3, 5, 1, 2, 4]
        final = [n, c * block * block, h // block, w // block]
    pieces = common.reshape(ctx, x, split, hint='blocks')
    moved = common.transpose(ctx, pieces, perm, hint='moved')
    common.reshape(ctx, moved, final, ctx.output(0))


def _nchw(ctx, x):
    shape = ctx.static_shape(x)
    if len(shape) != 4:
        raise ctx.invalid('the input must be 4-D (NCHW), got shape {}'.format(shape))
    return shape


@converts('Trilu')
def convert_trilu(ctx):
    # Zeroes the elements above (lower) or below (upper) the k-th diagonal of
    # the last two dims: a select against a mask built from the static shape.
    ctx.check_inputs(1, 2)
    ctx.check_outputs(1)
    x = ctx.input(0)
    k_value = ctx.optional_static(1, 'k')
    k = 0 if k_value is None else int(common.int_list(ctx, k_value, 'k')[0])
    upper = ctx.attrs.int('upper', 1)
    shape = ctx.static_shape(x)
    if len(shape) < 2:
        raise ctx.invalid('the input must have rank >= 2, got shape {}'.format(shape))
    rows, cols = np.indices(shape[-2:])
    keep = (cols - rows >= k) if upper else (cols - rows <= k)
    zero = ctx.constant(np.zeros((1,), dtype=ctx.float_dtype(x)), 'zero')
    ctx.op('Where', [ctx.constant(keep, 'mask'), x, zero], [ctx.output(0)])
