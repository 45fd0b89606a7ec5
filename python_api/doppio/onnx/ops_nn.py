"""Converters of ONNX neural-network ops: convolution, pooling,
normalization, Gemm/MatMul, Softmax, Dropout, PRelu, nearest Resize/Upsample,
RoiAlign."""

import math

import numpy as np

from doppio.onnx import common
from doppio.onnx.context import converts


def _spatial_list(ctx, name, default, count):
    values = ctx.attrs.ints(name, None)
    if values is None:
        return [default] * count
    if len(values) != count:
        raise ctx.invalid('attribute {!r} has {} values for {} spatial axes'.format(
            name, len(values), count))
    return values


def _spatial_dims(ctx, x, count):
    """The spatial sizes of input x (NCHW...), or None when unknown."""
    shape = ctx.shape(x)
    if shape is None or len(shape) != count + 2 or None in shape[2:]:
        return None
    return list(shape[2:])


def _window_args(ctx, x, kernel, pool):
    """Doppio's kernels/strides/pads/dilations (+ legacy_pad) for a conv or
    pool node: auto_pad SAME_* and ceil_mode become explicit pads, which
    needs the input's spatial size."""
    count = len(kernel)
    strides = _spatial_list(ctx, 'strides', 1, count)
    dilations = _spatial_list(ctx, 'dilations', 1, count)
    pads = ctx.attrs.ints('pads', None)
    auto_pad = ctx.attrs.string('auto_pad', 'NOTSET')
    ceil_mode = ctx.attrs.int('ceil_mode', 0) if pool else 0
    if pads is not None and len(pads) != 2 * count:
        raise ctx.invalid('attribute pads has {} values for {} spatial axes'.format(
            len(pads), count))
    if any(s <= 0 for s in strides) or any(d <= 0 for d in dilations) or any(
            k <= 0 for k in kernel):
        raise ctx.invalid('kernel_shape, strides and dilations must be positive')
    if pads is not None and any(p < 0 for p in pads):
        raise ctx.unsupported('negative pads are not supported')
    args = {'kernels': kernel, 'strides': strides}
    if not pool or any(d != 1 for d in dilations):
        args['dilations'] = dilations
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]

    if auto_pad in ('SAME_UPPER', 'SAME_LOWER'):
        sizes = _spatial_dims(ctx, x, count)
        if sizes is None:
            if auto_pad == 'SAME_UPPER' and all(d == 1 for d in dilations) and not ceil_mode:
                args['legacy_pad'] = 2  # Caffe2's SAME puts the odd pad at the end too
                return args
            ctx.static_shape(x)  # raises: the pads depend on the size
        pads = [0] * (2 * count)
        for axis, size in enumerate(sizes):
            out = -(-size // strides[axis])
            total = max(0, (out - 1) * strides[axis] + effective[axis] - size)
            small, large = total // 2, total - total // 2
            pads[axis], pads[count + axis] = (
                (small, large) if auto_pad == 'SAME_UPPER' else (large, small))
    elif auto_pad == 'VALID' or (auto_pad == 'NOTSET' and pads is None):
        pads = [0] * (2 * count)
    elif auto_pad != 'NOTSET':
        raise ctx.invalid('unknown auto_pad {!r}'.format(auto_pad))

    if ceil_mode:
        sizes = _spatial_dims(ctx, x, count)
        if sizes is None:
            ctx.static_shape(x)
        pads = list(pads)
        for axis, size in enumerate(sizes):
            begin, end = pads[axis], pads[count + axis]
            span = size + begin + end - effective[axis]
            if span < 0:
                raise ctx.invalid('the kernel is larger than the padded input')
            out = -(-span // strides[axis]) + 1
            # The last window must start inside the input or its begin pad.
            if (out - 1) * strides[axis] >= size + begin:
                out -= 1
            extra = (out - 1) * strides[axis] + effective[axis] - (size + begin + end)
            if extra > 0:
                if ctx.attrs.int('count_include_pad', 0):
                    raise ctx.unsupported('ceil_mode with count_include_pad is not supported')
                pads[count + axis] += extra
    args['pads'] = pads
    return args


def _kernel_shape(ctx, weight, x):
    kernel = ctx.attrs.ints('kernel_shape', None)
    if kernel is not None:
        return kernel
    shape = ctx.shape(weight)
    if shape is None or None in shape[2:]:
        shape = ctx.static_shape(weight)
    return list(shape[2:])


@converts('Conv')
def convert_conv(ctx):
    ctx.check_inputs(2, 3)
    ctx.check_outputs(1)
    x, weight = ctx.input(0), ctx.input(1)
    kernel = _kernel_shape(ctx, weight, x)
    args = _window_args(ctx, x, kernel, pool=False)
    ctx.op('Conv', ctx.inputs(), [ctx.output(0)], group=ctx.attrs.int('group', 1), **args)


@converts('ConvTranspose')
def convert_conv_transpose(ctx):
    ctx.check_inputs(2, 3)
    ctx.check_outputs(1)
    x, weight = ctx.input(0), ctx.input(1)
    kernel = _kernel_shape(ctx, weight, x)
    count = len(kernel)
    strides = _spatial_list(ctx, 'strides', 1, count)
    dilations = _spatial_list(ctx, 'dilations', 1, count)
    output_padding = _spatial_list(ctx, 'output_padding', 0, count)
    pads = ctx.attrs.ints('pads', None)
    auto_pad = ctx.attrs.string('auto_pad', 'NOTSET')
    output_shape = ctx.attrs.ints('output_shape', None)
    if pads is not None and len(pads) != 2 * count:
        raise ctx.invalid('attribute pads has {} values for {} spatial axes'.format(
            len(pads), count))
    if output_shape is not None and len(output_shape) > count:
        output_shape = output_shape[-count:]  # given with N and C
    adjs = list(output_padding)
    if output_shape is not None or auto_pad in ('SAME_UPPER', 'SAME_LOWER'):
        sizes = _spatial_dims(ctx, x, count) or list(ctx.static_shape(x)[2:])
        if output_shape is None:
            output_shape = [size * stride for size, stride in zip(sizes, strides)]
        if len(output_shape) != count:
            raise ctx.invalid('output_shape {} does not match {} spatial axes'.format(
                output_shape, count))
        pads = [0] * (2 * count)
        for axis in range(count):
            total = (strides[axis] * (sizes[axis] - 1) + output_padding[axis]
                     + (kernel[axis] - 1) * dilations[axis] + 1 - output_shape[axis])
            if total < 0:
                # A larger output than the strided input gives: extra rows at
                # the end, which Doppio's adj provides.
                adjs[axis] += -total
                continue
            small, large = total // 2, total - total // 2
            pads[axis], pads[count + axis] = (
                (small, large) if auto_pad == 'SAME_UPPER' else (large, small))
    elif auto_pad not in ('NOTSET', 'VALID'):
        raise ctx.invalid('unknown auto_pad {!r}'.format(auto_pad))
    elif pads is None or auto_pad == 'VALID':
        pads = [0] * (2 * count)
    ctx.op('ConvTranspose', ctx.inputs(), [ctx.output(0)], kernels=kernel, strides=strides,
           pads=pads, adjs=adjs, dilations=dilations, group=ctx.attrs.int('group', 1))


@converts('MaxPool', 'AveragePool')
def convert_pool(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1, 2)
    outputs = [ctx.output(0)]
    storage_order = ctx.attrs.int('storage_order', 0)
    if ctx.optional_output(1) is not None:
        outputs.append(ctx.output(1))
    kernel = ctx.attrs.ints('kernel_shape', None)
    if kernel is None:
        raise ctx.invalid('attribute kernel_shape is required')
    x = ctx.input(0)
    args = _window_args(ctx, x, kernel, pool=True)
    if ctx.op_type == 'AveragePool':
        args['count_include_pad'] = ctx.attrs.int('count_include_pad', 0)
    elif len(outputs) > 1:
        args['storage_order'] = storage_order
    ctx.op(ctx.op_type, [x], outputs, **args)


@converts('GlobalAveragePool', 'GlobalMaxPool')
def convert_global_pool(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    doppio_type = 'AveragePool' if ctx.op_type == 'GlobalAveragePool' else 'MaxPool'
    ctx.op(doppio_type, [ctx.input(0)], [ctx.output(0)], global_pooling=1)


@converts('BatchNormalization')
def convert_batch_norm(ctx):
    ctx.check_inputs(5)
    training = ctx.attrs.int('training_mode', 0) if ctx.opset >= 14 else 0
    if ctx.opset < 7:
        training = not ctx.attrs.int('is_test', 0)
    if ctx.opset < 9 and not ctx.attrs.int('spatial', 1):
        raise ctx.unsupported('spatial=0 (statistics per element) is not supported')
    if training and ctx.opset >= 14:
        _batch_norm_training(ctx)
        return
    ctx.attrs.ignore('momentum')  # only updates running statistics in training
    if training or ctx.num_outputs > 1:
        raise ctx.unsupported('training mode before opset 14 (saved mean and variance '
                              'outputs) is not supported')
    ctx.check_outputs(1)
    ctx.op('SpatialBN', ctx.inputs(), [ctx.output(0)], is_test=1,
           epsilon=ctx.attrs.float('epsilon', 1e-5))


def _batch_norm_training(ctx):
    """ONNX's training_mode=1: normalized with the batch's mean and
    population variance over every axis but the channels', and, as outputs 1
    and 2, running statistics updated with momentum (running * momentum +
    batch * (1 - momentum)). Doppio's SpatialBN updates its running variance
    with the unbiased variance (as PyTorch), so this is spelled in
    elementwise ops."""
    ctx.check_outputs(1, 3)
    x, scale, bias, mean, var = ctx.inputs()
    rank = ctx.rank(x)
    axes = [0] + list(range(2, rank))
    epsilon = ctx.attrs.float('epsilon', 1e-5)
    momentum = ctx.attrs.float('momentum', 0.9)
    per_channel = [1, -1] + [1] * (rank - 2)
    batch_mean, centered, squares, batch_var = (ctx.temp(n) for n in (
        'batch_mean', 'centered', 'squares', 'batch_var'))
    ctx.op('ReduceMean', [x], [batch_mean], axes=axes, keepdims=1)
    ctx.op('Sub', [x, batch_mean], [centered])
    ctx.op('Mul', [centered, centered], [squares])
    ctx.op('ReduceMean', [squares], [batch_var], axes=axes, keepdims=1)
    std, normalized, scaled = ctx.temp('std'), ctx.temp('normalized'), ctx.temp('scaled')
    ctx.op('Add', [batch_var, ctx.scalar_like(epsilon, x, 'epsilon')], [std])
    ctx.op('Sqrt', [std], [std])
    ctx.op('Div', [centered, std], [normalized])
    ctx.op('Mul', [normalized, common.reshape(ctx, scale, per_channel, hint='scale')], [scaled])
    ctx.op('Add', [scaled, common.reshape(ctx, bias, per_channel, hint='bias')], [ctx.output(0)])
    for index, (running, batch) in enumerate(((mean, batch_mean), (var, batch_var)), start=1):
        out = ctx.optional_output(index)
        if out is None:
            continue
        kept, added = ctx.temp('kept'), ctx.temp('added')
        ctx.op('Scale', [running], [kept], scale=momentum)
        ctx.op('Scale', [common.reshape(ctx, batch, [-1], hint='batch_stat')], [added],
               scale=1.0 - momentum)
        ctx.op('Add', [kept, added], [out])


@converts('InstanceNormalization')
def convert_instance_norm(ctx):
    ctx.check_inputs(3)
    ctx.check_outputs(1)
    ctx.op('InstanceNorm', ctx.inputs(), [ctx.output(0)],
           epsilon=ctx.attrs.float('epsilon', 1e-5))


@converts('LRN')
def convert_lrn(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    size = ctx.attrs.int('size', None)
    if size is None or size <= 0:
        raise ctx.invalid('attribute size is required and must be positive')
    ctx.op('LRN', [ctx.input(0)], [ctx.output(0)], size=size,
           alpha=ctx.attrs.float('alpha', 1e-4), beta=ctx.attrs.float('beta', 0.75),
           bias=ctx.attrs.float('bias', 1.0))


@converts('LayerNormalization')
def convert_layer_norm(ctx):
    ctx.check_inputs(2, 3)
    ctx.check_outputs(1, 3)
    x, scale, bias = ctx.input(0), ctx.input(1), ctx.optional_input(2)
    axis = ctx.attrs.int('axis', -1)
    epsilon = ctx.attrs.float('epsilon', 1e-5)
    ctx.attrs.ignore('stash_type')  # Doppio accumulates the statistics in double
    rank = ctx.rank(x)
    axis = common.normalize_axis(ctx, axis, rank)
    normalized, mean, std = ctx.temp('normalized'), ctx.temp('mean'), ctx.temp('std')
    if _affine_in_layer_norm(ctx, x, scale, bias, axis):
        # Scale and B are one value per element of a row: LayerNorm applies
        # them in its own pass instead of two broadcasting ops.
        if bias is None:
            bias = ctx.temp('zero_bias')
            ctx.set_constant(bias, np.zeros_like(ctx.static_value(scale)))
        ctx.op('LayerNorm', [x, scale, bias], [ctx.output(0), mean, std], axis=axis,
               epsilon=epsilon, elementwise_affine=1)
        _layer_norm_statistics(ctx, x, mean, std, axis, rank)
        return
    ctx.op('LayerNorm', [x], [normalized, mean, std], axis=axis, epsilon=epsilon)
    # Scale and B broadcast against the normalized dims, as ONNX specifies.
    scaled = ctx.output(0) if bias is None else ctx.temp('scaled')
    ctx.op('Mul', [normalized, scale], [scaled])
    if bias is not None:
        ctx.op('Add', [scaled, bias], [ctx.output(0)])
    _layer_norm_statistics(ctx, x, mean, std, axis, rank)


def _affine_in_layer_norm(ctx, x, scale, bias, axis):
    """Whether Scale (and B) are constants of exactly X's row shape, the
    form LayerNorm(elementwise_affine=1) takes."""
    shape = ctx.shape(x)
    if shape is None or any(d is None for d in shape[axis:]):
        return False
    row = tuple(shape[axis:])
    for name in (scale, bias):
        if name is None:
            continue
        value = ctx.static_value(name)
        if value is None or tuple(value.shape) != row or value.dtype != ctx.float_dtype(x):
            return False
    return True


def _layer_norm_statistics(ctx, x, mean, std, axis, rank):
    """ONNX's optional Mean and InvStdDev outputs from LayerNorm's."""
    # Doppio's statistics are X.shape[:axis] + [1]; ONNX keeps the rank.
    statistic_shape = [0] * axis + [1] * (rank - axis)
    if ctx.optional_output(1) is not None:
        common.reshape(ctx, mean, statistic_shape, ctx.output(1))
    if ctx.optional_output(2) is not None:
        inverse = ctx.temp('inverse_std')
        ctx.op('Div', [ctx.scalar_like(1.0, x, 'one'), std], [inverse])
        common.reshape(ctx, inverse, statistic_shape, ctx.output(2))


@converts('MeanVarianceNormalization')
def convert_mvn(ctx):
    # (X - mean) / sqrt(var + 1e-9) over `axes`, ONNX's function body
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x = ctx.input(0)
    axes = ctx.attrs.ints('axes', [0, 2, 3])
    mean, centered, square, variance = (ctx.temp(h) for h in (
        'mean', 'centered', 'square', 'variance'))
    ctx.op('ReduceMean', [x], [mean], axes=axes, keepdims=1)
    ctx.op('Sub', [x, mean], [centered])
    ctx.op('Mul', [centered, centered], [square])
    ctx.op('ReduceMean', [square], [variance], axes=axes, keepdims=1)
    shifted, deviation = ctx.temp('shifted'), ctx.temp('deviation')
    ctx.op('Add', [variance, ctx.scalar_like(1e-9, x, 'epsilon')], [shifted])
    ctx.op('Sqrt', [shifted], [deviation])
    ctx.op('Div', [centered, deviation], [ctx.output(0)])


@converts('Gemm')
def convert_gemm(ctx):
    ctx.check_inputs(2 if ctx.opset >= 11 else 3, 3)
    ctx.check_outputs(1)
    a, b, c = ctx.input(0), ctx.input(1), ctx.optional_input(2)
    alpha = ctx.attrs.float('alpha', 1.0)
    beta = ctx.attrs.float('beta', 1.0)
    trans_a = ctx.attrs.int('transA', 0)
    trans_b = ctx.attrs.int('transB', 0)
    if ctx.opset < 7:
        ctx.attrs.ignore('broadcast')  # C broadcasts either way in valid models
    out = ctx.output(0)
    b_shape, c_shape = ctx.shape(b), ctx.shape(c) if c else None
    # Y = A B^T + c with c one row: Caffe2's FC, the common Linear layer.
    if (c is not None and not trans_a and trans_b and alpha == 1.0 and beta == 1.0
            and b_shape is not None and len(b_shape) == 2 and b_shape[0] is not None
            and c_shape in ((b_shape[0],), (1, b_shape[0]))):
        bias = c if len(c_shape) == 1 else common.reshape(ctx, c, [-1], hint='bias')
        ctx.op('FC', [a, b, bias], [out])
        return
    product = out if (c is None and alpha == 1.0) else ctx.temp('product')
    ctx.op('MatMul', [a, b], [product], trans_a=trans_a, trans_b=trans_b)
    scaled = product
    if alpha != 1.0:
        scaled = out if c is None else ctx.temp('scaled')
        ctx.op('Scale', [product], [scaled], scale=alpha)
    if c is not None:
        term = c
        if beta != 1.0:
            term = ctx.temp('scaled_c')
            ctx.op('Scale', [c], [term], scale=beta)
        ctx.op('Add', [scaled, term], [out])


@converts('MatMul')
def convert_matmul(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    a, b = ctx.input(0), ctx.input(1)
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if a_shape is not None and b_shape is not None and len(a_shape) == len(b_shape) == 1:
        # numpy gives a scalar; Doppio's batched product gives [1].
        product = ctx.temp('dot')
        ctx.op('BatchMatMul', [a, b], [product], broadcast=1)
        common.reshape(ctx, product, [], ctx.output(0))
        return
    ctx.op('BatchMatMul', [a, b], [ctx.output(0)], broadcast=1)


@converts('Softmax', 'LogSoftmax')
def convert_softmax(ctx):
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    x, out = ctx.input(0), ctx.output(0)
    if ctx.opset < 13:
        # Coerced to 2-D at `axis`: exactly Caffe2's Softmax.
        ctx.op(ctx.op_type, [x], [out], axis=ctx.attrs.int('axis', 1))
        return
    rank = ctx.rank(x)
    axis = common.normalize_axis(ctx, ctx.attrs.int('axis', -1), rank)
    if axis == rank - 1:
        ctx.op(ctx.op_type, [x], [out], axis=axis)
        return
    # One axis only: move it last, normalize there, move it back.
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(rank)]
    moved, normalized = ctx.temp('moved'), ctx.temp('normalized')
    common.transpose(ctx, x, perm, moved)
    ctx.op(ctx.op_type, [moved], [normalized], axis=rank - 1)
    common.transpose(ctx, normalized, inverse, out)


@converts('Dropout')
def convert_dropout(ctx):
    ctx.check_inputs(1, 1 if ctx.opset < 12 else 3)
    ctx.check_outputs(1, 2)
    ctx.attrs.ignore('seed')
    if ctx.opset < 12:
        ctx.attrs.float('ratio', 0.5)  # inference ignores it
        if ctx.opset < 7 and not ctx.attrs.int('is_test', 0):
            raise ctx.unsupported('training mode (is_test=0) is not supported')
    else:
        training = ctx.optional_static(2, 'training_mode')
        if training is not None and common.scalar_float(ctx, training, 'training_mode'):
            # Training-mode dropout of ratio 0 (torch's F.dropout(p=0.0), as
            # Swin's attention calls it) keeps everything: inference's result.
            ratio = ctx.optional_static(1, 'ratio')
            if ratio is None or common.scalar_float(ctx, ratio, 'ratio') != 0:
                raise ctx.unsupported('training_mode=1 is not supported (but with ratio 0); '
                                      'Doppio imports models for inference')
    outputs = [ctx.output(0)]
    if ctx.optional_output(1) is not None:
        outputs.append(ctx.output(1))  # all true in inference
    ctx.op('Dropout', [ctx.input(0)], outputs, is_test=1)


@converts('PRelu')
def convert_prelu(ctx):
    ctx.check_inputs(2)
    ctx.check_outputs(1)
    x, slope = ctx.input(0), ctx.input(1)
    x_shape, slope_shape = ctx.shape(x), ctx.shape(slope)
    if slope_shape is not None and x_shape is not None:
        channels = x_shape[1] if len(x_shape) > 1 else None
        count = math.prod(d for d in slope_shape) if None not in slope_shape else None
        per_channel = (len(x_shape) >= 2 and len(slope_shape) == len(x_shape) - 1
                       and slope_shape[0] == channels and channels is not None
                       and all(d == 1 for d in slope_shape[1:]))
        # Before opset 7 a 1-D slope was per channel, not numpy-broadcast.
        per_channel = per_channel or (ctx.opset < 7 and slope_shape == (channels,))
        if count == 1 or per_channel:
            flat = common.reshape(ctx, slope, [-1], hint='slope')
            ctx.op('PRelu', [x, flat], [ctx.output(0)])
            return
    # In general the slope broadcasts numpy-style:
    # max(0, x) + slope * min(0, x), with min(0, x) = x - max(0, x).
    positive, negative, scaled = ctx.temp('positive'), ctx.temp('negative'), ctx.temp('scaled')
    ctx.op('Relu', [x], [positive])
    ctx.op('Sub', [x, positive], [negative])
    ctx.op('Mul', [slope, negative], [scaled])
    ctx.op('Add', [positive, scaled], [ctx.output(0)])


# Coordinate mappings under which nearest-neighbour upsampling by an integer
# factor s picks input row floor(i / s) for output row i (checked for every s:
# half_pixel's source coordinate (2i + 1 - s) / 2s never rounds at a tie).
_REPEATING_COORDINATES = {
    'half_pixel': ('round_prefer_floor', 'round_prefer_ceil', 'floor'),
    'pytorch_half_pixel': ('round_prefer_floor', 'round_prefer_ceil', 'floor'),
    'asymmetric': ('floor', 'round_prefer_floor'),
}


def _resize_attributes(ctx):
    """(mode, coordinates, nearest_mode, extras, roi, scales, sizes) of a
    Resize or Upsample node; Upsample and Resize-10 map coordinates as
    'asymmetric' with 'floor' rounding."""
    mode = ctx.attrs.string('mode', 'nearest')
    mode = 'linear' if mode == 'bilinear' else mode
    coordinates, nearest_mode, extras, roi, sizes = 'asymmetric', 'floor', {}, None, None
    if ctx.op_type == 'Upsample':
        ctx.check_inputs(1, 1 if ctx.opset < 9 else 2)
        scales = ctx.attrs.floats('scales', None) if ctx.opset < 9 else ctx.static(1, 'scales')
    elif ctx.opset < 11:
        ctx.check_inputs(2)
        scales = ctx.static(1, 'scales')
    else:
        ctx.check_inputs(1, 4)
        coordinates = ctx.attrs.string('coordinate_transformation_mode', 'half_pixel')
        nearest_mode = ctx.attrs.string('nearest_mode', 'round_prefer_floor')
        extras = dict(cubic_coeff_a=ctx.attrs.float('cubic_coeff_a', -0.75),
                      exclude_outside=ctx.attrs.int('exclude_outside', 0),
                      extrapolation_value=ctx.attrs.float('extrapolation_value', 0.0))
        if coordinates == 'tf_crop_and_resize':
            roi = [float(v) for v in np.asarray(ctx.static(1, 'roi')).reshape(-1)]
        scales = ctx.optional_static(2, 'scales')
        sizes = ctx.optional_static(3, 'sizes')
        if scales is not None and np.asarray(scales).size == 0:
            scales = None
    return mode, coordinates, nearest_mode, extras, roi, scales, sizes


def _resized_dims(ctx, shape, roi, scales, sizes):
    """The output dims, and the scales for the coordinate transform (None:
    sizes / dims)."""
    if sizes is not None:
        sizes = common.int_list(ctx, sizes, 'sizes')
        if len(sizes) != len(shape):
            raise ctx.invalid('sizes {} do not match rank {}'.format(sizes, len(shape)))
        return sizes, None
    if scales is None:
        raise ctx.invalid('neither scales nor sizes is given')
    scales = [float(s) for s in np.asarray(scales).reshape(-1)]
    if len(scales) != len(shape) or any(not s > 0 for s in scales):
        raise ctx.invalid('scales {} must be positive, one per dim of {}'.format(scales, shape))
    rank = len(shape)
    spans = [roi[rank + i] - roi[i] for i in range(rank)] if roi else [1.0] * rank
    return [int(math.floor(d * w * s)) for d, w, s in zip(shape, spans, scales)], scales


@converts('Resize', 'Upsample')
def convert_resize(ctx):
    """Nearest-neighbour upsampling by integer factors as a repeat (reshape,
    expand, reshape); everything else as Doppio's Resize (ONNX's semantics:
    nearest, linear, cubic, every coordinate mapping)."""
    ctx.check_outputs(1)
    x = ctx.input(0)
    mode, coordinates, nearest_mode, extras, roi, scales, sizes = _resize_attributes(ctx)
    if mode not in ('nearest', 'linear', 'cubic'):
        raise ctx.invalid('mode {!r} is not nearest, linear or cubic'.format(mode))
    shape = ctx.static_shape(x)
    out_dims, scale_arg = _resized_dims(ctx, shape, roi, scales, sizes)
    common.check_size(ctx, out_dims, 'the output')
    factors = [o // d if d and o % d == 0 else 0 for o, d in zip(out_dims, shape)]
    repeats = (mode == 'nearest' and all(f >= 1 for f in factors) and roi is None and
               (scale_arg is None or all(s == f for s, f in zip(scale_arg, factors))) and
               nearest_mode in _REPEATING_COORDINATES.get(coordinates, ()))
    if not repeats:
        args = dict(extras, sizes=out_dims, mode=mode, coordinate_transformation_mode=coordinates,
                    nearest_mode=nearest_mode)
        if scale_arg is not None:
            args['scales'] = scale_arg
        if roi is not None:
            args['roi'] = roi
        ctx.op('Resize', [x], [ctx.output(0)], **args)
        ctx.record_shape(ctx.output(0), out_dims, ctx.dtype(x))
        return
    interleaved = [v for d in shape for v in (d, 1)]
    repeated = [v for d, f in zip(shape, factors) for v in (d, f)]
    spread = common.reshape(ctx, x, interleaved, hint='interleaved')
    ctx.record_shape(spread, interleaved, ctx.dtype(x))
    stretched = common.expand_to(ctx, spread, repeated, 'repeated')
    common.reshape(ctx, stretched, out_dims, ctx.output(0))


@converts('Gelu')
def convert_gelu(ctx):
    # ONNX's Gelu (opset 20), and what patterns.py folds Div -> Erf -> Add ->
    # Mul -> Mul chains into.
    ctx.check_inputs(1)
    ctx.check_outputs(1)
    approximate = ctx.attrs.string('approximate', 'none')
    if approximate not in ('none', 'tanh'):
        raise ctx.invalid("attribute approximate is {!r}; it must be 'none' or "
                          "'tanh'".format(approximate))
    ctx.op('Gelu', [ctx.input(0)], [ctx.output(0)], fast_gelu=int(approximate == 'tanh'))


@converts('RoiAlign')
def convert_roi_align(ctx):
    """Caffe2's RoIAlign, its RoIs [n, 5] made of batch_indices and rois.
    ONNX's half_pixel (opset 16's default) is RoIAlign's aligned; opset 10's
    behaviour, output_half_pixel, is Caffe2's own."""
    ctx.check_inputs(3)
    ctx.check_outputs(1)
    if ctx.attrs.string('mode', 'avg') != 'avg':
        raise ctx.unsupported("mode 'max' is not supported: RoIAlign averages its samples")
    transform = 'output_half_pixel'
    if ctx.opset >= 16:
        transform = ctx.attrs.string('coordinate_transformation_mode', 'half_pixel')
    if transform not in ('half_pixel', 'output_half_pixel'):
        raise ctx.invalid('coordinate_transformation_mode %r is not half_pixel or '
                          'output_half_pixel' % transform)
    x, rois, indices = ctx.inputs()
    dtype = ctx.dtype(rois)
    column = ctx.temp('roi_batch_index')
    ctx.op('ExpandDims', [common.cast_to(ctx, indices, dtype, 'roi_batch_index_cast')], [column],
           dims=[1])
    five = ctx.temp('rois5')
    ctx.op('Concat', [column, rois], [five, ctx.temp('rois5_split')], axis=1)
    ctx.op('RoIAlign', [x, five], [ctx.output(0)],
           pooled_h=ctx.attrs.int('output_height', 1), pooled_w=ctx.attrs.int('output_width', 1),
           sampling_ratio=ctx.attrs.int('sampling_ratio', 0),
           spatial_scale=ctx.attrs.float('spatial_scale', 1.0),
           aligned=int(transform == 'half_pixel'))
