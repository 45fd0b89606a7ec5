"""Helpers the op converters share: axes, broadcasting, casts, reshapes."""

import numpy as np

from doppio.onnx import tensors


def normalize_axis(ctx, axis, rank, what='axis'):
    """`axis` in [-rank, rank) as a non-negative axis."""
    if not -rank <= axis < rank:
        raise ctx.invalid('{} {} is out of range for rank {}'.format(what, axis, rank))
    return axis + rank if axis < 0 else axis


def normalize_axes(ctx, axes, rank, what='axes'):
    normalized = [normalize_axis(ctx, int(a), rank, what) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise ctx.invalid('{} {} repeats an axis'.format(what, list(axes)))
    return normalized


def broadcast_shapes(ctx, *shapes):
    """numpy's broadcast of static shapes."""
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(rank):
        dims = {s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ctx.invalid('shapes {} do not broadcast'.format(
                ', '.join(str(tuple(s)) for s in shapes)))
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def expand_to(ctx, name, shape, hint='expanded'):
    """`name` broadcast to the static `shape` (itself when it has it)."""
    if ctx.shape(name) == tuple(shape):
        return name
    target = ctx.constant(np.asarray(shape, dtype=np.int64), hint + '_shape')
    out = ctx.temp(hint)
    ctx.op('Expand', [name, target], [out])
    ctx.record_shape(out, shape, ctx.dtype(name))
    return out


def same_shape_inputs(ctx, names, hint='expanded'):
    """`names` broadcast to one shape, for Doppio ops that want equal shapes
    (Sum, Max, Min, Pow with a tensor exponent): unchanged when the shapes
    are known to match, else each is expanded to the static broadcast shape."""
    shapes = [ctx.shape(n) for n in names]
    if all(s is not None and None not in s for s in shapes) and len(set(shapes)) == 1:
        return list(names)
    static = [ctx.static_shape(n) for n in names]
    target = broadcast_shapes(ctx, *static)
    return [expand_to(ctx, n, target, '{}{}'.format(hint, i)) for i, n in enumerate(names)]


def cast_to(ctx, name, dtype, hint='cast'):
    """`name` converted to numpy `dtype` (itself when it has it)."""
    dtype = np.dtype(dtype)
    if ctx.dtype(name) == dtype:
        return name
    out = ctx.temp(hint)
    ctx.op('Cast', [name], [out], to=tensors.doppio_type_of_numpy(dtype, ctx.where))
    ctx.record_shape(out, ctx.shape(name), dtype)
    return out


def reshape(ctx, name, shape, output=None, hint='reshaped'):
    """Reshape of `name` to the static `shape` (Caffe2's Reshape: 0 keeps a
    dim, -1 infers one) into `output` or a new blob; returns the blob."""
    out = output or ctx.temp(hint)
    ctx.op('Reshape', [name], [out, ctx.temp(hint + '_old_shape')],
           shape=[int(d) for d in shape])
    resolved = _resolved_reshape(ctx.shape(name), [int(d) for d in shape])
    if resolved is not None:
        # Later nodes may need it where shape inference did not get (a shape
        # computed in the graph and folded here).
        ctx.record_shape(out, resolved, ctx.dtype(name))
    return out


def _resolved_reshape(input_shape, shape):
    """The output dims of Caffe2's reshape rule, or None when the input's
    shape is not fully known or the shape does not fit it."""
    if input_shape is None or any(d is None for d in input_shape):
        return None
    dims = [input_shape[i] if d == 0 and i < len(input_shape) else d
            for i, d in enumerate(shape)]
    total = int(np.prod(input_shape, dtype=np.int64))
    if dims.count(-1) == 1:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            return None
        dims[dims.index(-1)] = total // known
    if -1 in dims or int(np.prod(dims, dtype=np.int64)) != total:
        return None
    return dims


def transpose(ctx, name, perm, output=None, hint='transposed'):
    out = output or ctx.temp(hint)
    ctx.op('Transpose', [name], [out], axes=[int(p) for p in perm])
    shape = ctx.shape(name)
    if shape is not None:
        ctx.record_shape(out, [shape[p] for p in perm], ctx.dtype(name))
    return out


def scalar_float(ctx, value, what):
    """A one-element static input as a Python float."""
    value = np.asarray(value)
    if value.size != 1:
        raise ctx.invalid('{} must hold one value, got shape {}'.format(what, value.shape))
    return float(value.reshape(-1)[0])


def int_list(ctx, value, what):
    """A static 1-D (or scalar) integer input as a list of ints."""
    value = np.asarray(value)
    if value.ndim > 1 or value.dtype.kind not in 'iu':
        raise ctx.invalid('{} must be a 1-D integer tensor, got {} of shape {}'.format(
            what, value.dtype, value.shape))
    return [int(v) for v in value.reshape(-1)]


# The most elements a tensor the conversion fills itself (ConstantOfShape,
# Range, EyeLike) or sizes statically (Tile, Resize) may have: a corrupted
# or hostile model must not make the importer allocate without bound.
MAX_STATIC_ELEMENTS = 1 << 28


def check_size(ctx, shape, what):
    count = 1
    for d in shape:
        if d < 0:
            raise ctx.invalid('{} has a negative dim: {}'.format(what, list(shape)))
        count *= int(d)
    if count > MAX_STATIC_ELEMENTS:
        raise ctx.unsupported('{} of shape {} ({} elements) exceeds the {} elements doppio '
                              'sizes when converting'.format(what, list(shape), count,
                                                             MAX_STATIC_ELEMENTS))
