"""An independent interpreter of Caffe2 ops for checking whole nets stage by
stage: each op's outputs are computed from the inputs Doppio gave that op,
with torch / torchvision (float64) and the numpy detection formulas of
tests/operators/detection_reference.py, and compared with Doppio's.

Values are numpy arrays, or for Int8TensorCPU blobs Int8(q, scale,
zero_point). An Int8 op is its float op on the reals its inputs stand for,
rounded once into the output's quantization (ties to even), as Caffe2's
QNNPACK kernels are specified; Doppio may differ by one step at exact
midpoints. The ops covered are those of Caffe2's exported detection nets
(Detectron's Faster / Mask R-CNN, Mask R-CNN2Go fp32 and int8)."""
import collections

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.ops as tv_ops

import detection_reference as ref
from doppio import utils

Int8 = collections.namedtuple('Int8', ['q', 'scale', 'zero_point'])


def arg(op, name, default=None):
    """Argument `name` of `op` (strings decoded), or `default`."""
    value = utils.ArgsToDict(op.arg).get(name, default)
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value.decode() if isinstance(value, bytes) else value


def real(value):
    if isinstance(value, Int8):
        return value.scale * (value.q.astype(np.float64) - value.zero_point)
    return np.asarray(value, np.float64)


def quantize(x, scale, zero_point, dtype=np.uint8):
    info = np.iinfo(dtype)
    return np.clip(np.round(x / scale) + zero_point, info.min, info.max).astype(dtype)


def _t(x):
    return torch.from_numpy(np.ascontiguousarray(real(x)))


def _nhwc(op, default):
    return arg(op, 'order', default) == 'NHWC'


def _window(op, name, default):
    value = arg(op, name, None)
    if value is not None:
        return (value, value)
    return (arg(op, name + '_h', default), arg(op, name + '_w', default))


def _pads(op):
    pad = arg(op, 'pad', None)
    if pad is not None:
        return pad, pad, pad, pad
    pads = arg(op, 'pads', None)
    if pads:
        return pads[0], pads[1], pads[2], pads[3]  # top, left, bottom, right
    return (arg(op, 'pad_t', 0), arg(op, 'pad_l', 0), arg(op, 'pad_b', 0), arg(op, 'pad_r', 0))


def _to_nchw(x, nhwc):
    return x.permute(0, 3, 1, 2) if nhwc else x


def _from_nchw(x, nhwc):
    return x.permute(0, 2, 3, 1) if nhwc else x


def conv(op, inputs, default_order='NCHW'):
    nhwc = _nhwc(op, default_order)
    x, w = _to_nchw(_t(inputs[0]), nhwc), _to_nchw(_t(inputs[1]), nhwc)
    b = _t(inputs[2]) if len(inputs) > 2 else None
    top, left, bottom, right = _pads(op)
    x = F.pad(x, (left, right, top, bottom))
    y = F.conv2d(x, w, b, stride=_window(op, 'stride', 1), dilation=_window(op, 'dilation', 1),
                 groups=arg(op, 'group', 1))
    return _from_nchw(y, nhwc).numpy()


def fc(op, inputs):
    x, w = real(inputs[0]), real(inputs[1])
    axis = arg(op, 'axis', 1)
    x = x.reshape(int(np.prod(x.shape[:axis])), -1)
    return x @ w.reshape(w.shape[0], -1).T + real(inputs[2])


def pool(op, inputs, default_order='NCHW', kind='avg'):
    nhwc = _nhwc(op, default_order)
    x = _to_nchw(_t(inputs[0]), nhwc)
    if arg(op, 'global_pooling', 0):
        kernel = tuple(x.shape[2:])
    else:
        kernel = _window(op, 'kernel', 1)
    top, left, bottom, right = _pads(op)
    assert top == bottom and left == right, 'asymmetric pool padding'
    stride = _window(op, 'stride', 1)
    if kind == 'max':
        y = F.max_pool2d(x, kernel, stride, (top, left))
    else:
        y = F.avg_pool2d(x, kernel, stride, (top, left),
                         count_include_pad=bool(arg(op, 'count_include_pad', 0)))
    return _from_nchw(y, nhwc).numpy()


def resize_nearest(op, inputs, default_order='NCHW'):
    nhwc = _nhwc(op, default_order)
    x = _to_nchw(_t(inputs[0]), nhwc)
    hs, ws = arg(op, 'height_scale', 1.0), arg(op, 'width_scale', 1.0)
    out_h, out_w = int(x.shape[2] * hs), int(x.shape[3] * ws)
    # Caffe2: source index min(floor(dst / scale), size - 1)
    rows = np.minimum((np.arange(out_h) / hs).astype(np.int64), x.shape[2] - 1)
    cols = np.minimum((np.arange(out_w) / ws).astype(np.int64), x.shape[3] - 1)
    y = x[:, :, rows][:, :, :, cols]
    return _from_nchw(y, nhwc).numpy()


def roi_align(op, inputs, default_order='NCHW'):
    nhwc = _nhwc(op, default_order)
    x = _to_nchw(_t(inputs[0]), nhwc)
    rois = real(inputs[1])
    if rois.shape[1] == 4:
        rois = np.concatenate([np.zeros((len(rois), 1)), rois], axis=1)
    y = tv_ops.roi_align(x, torch.from_numpy(rois), (arg(op, 'pooled_h', 1), arg(op, 'pooled_w', 1)),
                         spatial_scale=arg(op, 'spatial_scale', 1.0),
                         sampling_ratio=arg(op, 'sampling_ratio', -1),
                         aligned=bool(arg(op, 'aligned', 0)))
    return _from_nchw(y, nhwc).numpy()


def softmax(x, axis=1):
    x = real(x)
    shape = x.shape
    x = x.reshape(int(np.prod(shape[:axis])), -1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(shape)


def generate_proposals(op, inputs):
    scores, deltas, im_info, anchors = [real(v) for v in inputs]
    if anchors.shape[1] == 5:
        return list(ref.generate_proposals_rotated(
            scores, deltas, im_info, anchors, 1.0 / arg(op, 'spatial_scale', 1.0 / 16),
            arg(op, 'pre_nms_topN', 6000), arg(op, 'post_nms_topN', 300),
            arg(op, 'nms_thresh', 0.7), arg(op, 'min_size', 16.0),
            arg(op, 'clip_angle_thresh', 1.0), float(arg(op, 'legacy_plus_one', 1))))
    rois, probs = ref.generate_proposals(
        scores, deltas, im_info, anchors, 1.0 / arg(op, 'spatial_scale', 1.0 / 16),
        arg(op, 'pre_nms_topN', 6000), arg(op, 'post_nms_topN', 300),
        arg(op, 'nms_thresh', 0.7), arg(op, 'min_size', 16.0),
        bool(arg(op, 'correct_transform_coords', 0)), float(arg(op, 'legacy_plus_one', 1)))
    return [rois, probs]


def bbox_transform(op, inputs):
    rois, deltas, im_info = [real(v) for v in inputs[:3]]
    rotated = bool(arg(op, 'rotated', 0))
    if rois.shape[1] == (5 if rotated else 4):
        rois = np.concatenate([np.zeros((len(rois), 1)), rois], axis=1)
    if rotated:
        out = ref.bbox_transform_rotated_op(
            rois, deltas, im_info, tuple(arg(op, 'weights', [1.0] * 4)),
            bool(arg(op, 'apply_scale', 1)), arg(op, 'clip_angle_thresh', 1.0),
            float(arg(op, 'legacy_plus_one', 1)))
        splits = np.array([np.sum(rois[:, 0] == i) for i in range(len(im_info))], np.float64)
        return [out, splits]
    out = ref.bbox_transform_op(rois, deltas, im_info, tuple(arg(op, 'weights', [1.0] * 4)),
                                bool(arg(op, 'apply_scale', 1)),
                                bool(arg(op, 'correct_transform_coords', 0)),
                                float(arg(op, 'legacy_plus_one', 1)))
    splits = np.array([np.sum(rois[:, 0] == i) for i in range(len(im_info))], np.float64)
    return [out, splits]


def box_with_nms_limit(op, inputs):
    scores, boxes = real(inputs[0]), real(inputs[1])
    splits = real(inputs[2]).astype(int) if len(inputs) > 2 else [len(scores)]
    soft = arg(op, 'soft_nms_method', 'linear') if arg(op, 'soft_nms_enabled', 0) else None
    got = ref.box_with_nms_limit(scores.astype(np.float32), boxes.astype(np.float32), splits,
                                 arg(op, 'score_thresh', 0.05), arg(op, 'nms', 0.3),
                                 arg(op, 'detections_per_im', 100), soft,
                                 float(arg(op, 'legacy_plus_one', 1)),
                                 rotated=bool(arg(op, 'rotated', 0)),
                                 agnostic=bool(arg(op, 'cls_agnostic_bbox_reg', 0)),
                                 include_bg=bool(arg(op, 'input_boxes_include_bg_cls', 1)),
                                 output_bg=bool(arg(op, 'output_classes_include_bg_cls', 1)))
    dim = 5 if arg(op, 'rotated', 0) else 4
    return [np.array(got['scores']), np.array(got['boxes']).reshape(-1, dim),
            np.array(got['classes'], np.float64), np.array(got['splits'], np.float64),
            np.array(got['keeps'], np.float64), np.array(got['sizes']).reshape(-1, scores.shape[1])]


def slice_op(op, inputs):
    x = real(inputs[0])
    starts, ends = arg(op, 'starts'), arg(op, 'ends')
    index = tuple(slice(s, e + 1 + x.shape[d] if e < 0 else e)
                  for d, (s, e) in enumerate(zip(starts, ends)))
    return x[index]


def _float_ops():
    return {
        'Conv': lambda op, v: [conv(op, v)],
        'FC': lambda op, v: [fc(op, v)],
        'Relu': lambda op, v: [np.maximum(real(v[0]), 0)],
        'Sigmoid': lambda op, v: [1 / (1 + np.exp(-real(v[0])))],
        'Sum': lambda op, v: [sum(real(x) for x in v)],
        'Add': lambda op, v: [real(v[0]) + real(v[1])],
        'Div': lambda op, v: [real(v[0]) / real(v[1])],
        'Softmax': lambda op, v: [softmax(v[0], arg(op, 'axis', 1))],
        'AveragePool': lambda op, v: [pool(op, v)],
        'MaxPool': lambda op, v: [pool(op, v, kind='max')],
        'ResizeNearest': lambda op, v: [resize_nearest(op, v)],
        'RoIAlign': lambda op, v: [roi_align(op, v)],
        'NCHW2NHWC': lambda op, v: [real(v[0]).transpose(0, 2, 3, 1)],
        'NHWC2NCHW': lambda op, v: [real(v[0]).transpose(0, 3, 1, 2)],
        'GenerateProposals': generate_proposals,
        'BBoxTransform': bbox_transform,
        'BoxWithNMSLimit': box_with_nms_limit,
        'Slice': lambda op, v: [slice_op(op, v)],
        'IsEmpty': lambda op, v: [np.array(real(v[0]).size == 0)],
        'ConstantFill': lambda op, v: [np.full(arg(op, 'shape', []), arg(op, 'value', 0.0))],
    }


def _int8(float_fn, relu=False):
    """The Int8 form of a float op: reals in, one rounding out."""
    def run(op, inputs):
        y = float_fn(op, inputs)
        if relu:
            y = np.maximum(y, 0)
        return [Int8(quantize(y, arg(op, 'Y_scale'), arg(op, 'Y_zero_point')),
                     arg(op, 'Y_scale'), arg(op, 'Y_zero_point'))]
    return run


def _int8_ops():
    nhwc = 'NHWC'
    return {
        'Int8Quantize': _int8(lambda op, v: real(v[0])),
        'Int8Dequantize': lambda op, v: [real(v[0])],
        'Int8Conv': _int8(lambda op, v: conv(op, v, nhwc)),
        'Int8ConvRelu': _int8(lambda op, v: conv(op, v, nhwc), relu=True),
        'Int8FC': _int8(fc),
        'Int8Sum': _int8(lambda op, v: sum(real(x) for x in v)),
        'Int8SumRelu': _int8(lambda op, v: sum(real(x) for x in v), relu=True),
        'Int8Add': _int8(lambda op, v: real(v[0]) + real(v[1])),
        'Int8Relu': _int8(lambda op, v: real(v[0]), relu=True),
        'Int8Softmax': _int8(lambda op, v: softmax(v[0], 1)),
        'Int8Sigmoid': _int8(lambda op, v: 1 / (1 + np.exp(-real(v[0])))),
        'Int8AveragePool': _int8(lambda op, v: pool(op, v, nhwc)),
        'Int8MaxPool': _int8(lambda op, v: pool(op, v, nhwc, kind='max')),
        'Int8ResizeNearest': _int8(lambda op, v: resize_nearest(op, v, nhwc)),
        'Int8RoIAlign': _int8(lambda op, v: roi_align(op, v, nhwc)),
    }


OPS = dict(_float_ops(), **_int8_ops())


def run(op, inputs):
    """The reference outputs of `op` on `inputs` (KeyError: not covered)."""
    return OPS[op.type](op, inputs)


def fetch(name):
    """Blob `name` from Doppio's workspace as a reference value."""
    from doppio import workspace
    try:
        return workspace.FetchBlob(name)
    except TypeError:
        data, scale, zero_point = workspace.FetchInt8Blob(name)
        return Int8(data, scale, zero_point)


def _compare(op, index, output, got, want, rtol):
    """The worst difference of one output: quantization steps for Int8,
    else relative to the output's largest magnitude."""
    where = 'op #{} {} output {!r}'.format(index, op.type, output)
    if isinstance(want, Int8):
        assert isinstance(got, Int8), where + ' should be an Int8 blob'
        assert (got.scale, got.zero_point) == (want.scale, want.zero_point), where
        assert got.q.shape == want.q.shape, '{}: shape {} vs {}'.format(where, got.q.shape,
                                                                          want.q.shape)
        steps = np.abs(got.q.astype(np.int64) - want.q.astype(np.int64))
        worst = int(steps.max()) if steps.size else 0
        assert worst <= 1, '{}: {} quantization steps off'.format(where, worst)
        return worst
    got, want = real(got), real(want)
    assert got.shape == want.shape, '{}: shape {} vs {}'.format(where, got.shape, want.shape)
    if got.size == 0:
        return 0.0
    scale = max(float(np.abs(want).max()), 1e-6)
    worst = float(np.abs(got - want).max()) / scale
    assert worst <= rtol, '{}: off by {:.3g} of its largest value'.format(where, worst)
    return worst


def check_stages(net, rtol=1e-4, rows=None, depth=0):
    """Runs `net` in Doppio's workspace op by op (an If runs the branch its
    condition picks), checking each op's outputs against run() on the
    inputs Doppio gave it. Returns rows (depth, op index, type, worst
    difference); raises AssertionError at the first op that differs."""
    from doppio import workspace
    rows = [] if rows is None else rows
    for index, op in enumerate(net.op):
        if op.type == 'If':
            branch = 'then_net' if bool(fetch(op.input[0])) else 'else_net'
            rows.append((depth, index, 'If -> ' + branch, 0))
            chosen = arg(op, branch)
            if chosen is not None:
                check_stages(chosen, rtol, rows, depth + 1)
            continue
        inputs = [fetch(name) for name in op.input]
        workspace.RunOperatorOnce(op)
        want = run(op, inputs)
        got = [fetch(name) for name in op.output[:len(want)]]
        worst = max([_compare(op, index, name, g, w, rtol)
                     for name, g, w in zip(op.output, got, want)] or [0])
        rows.append((depth, index, op.type, worst))
    return rows
