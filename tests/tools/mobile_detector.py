"""A small predict net shaped like Caffe2's exported Mask R-CNN2Go, in float32
(NCHW) or quantized (Int8 ops, NHWC), without weights: inverted residual
blocks (1x1 expand, depthwise 3x3, 1x1 project, Sum), an RPN with
GenerateProposals, RoIAlign into a box head (AveragePool, FC, Softmax,
BBoxTransform, BoxWithNMSLimit with soft-NMS) and a mask head run by an If
on IsEmpty(bbox_nms), as the real export has it. Its weight blobs are
external inputs, so tools/synthesize_weights.py must make them."""
from doppio import core
from doppio.proto import doppio_pb2

STRIDE = 4  # the RPN feature's stride


class _Builder(object):
    def __init__(self, quantized):
        self.quantized = quantized
        self.ops, self.weights = [], []
        self.order = 'NHWC' if quantized else 'NCHW'

    def op(self, op_type, inputs, outputs, **kwargs):
        self.ops.append(core.CreateOperator(op_type, inputs, outputs, **kwargs))
        return outputs[0] if outputs else None

    def _q(self, scale, zero_point):
        return dict(Y_scale=scale, Y_zero_point=zero_point) if self.quantized else {}

    def conv(self, x, name, kernel, relu=True, stride=1, group=1, bias=True, scale=0.05):
        w, b = name + '_w', name + '_b'
        self.weights += [w] + ([b] if bias else [])
        args = dict(kernel=kernel, pad=kernel // 2, stride=stride, order=self.order)
        if group > 1:
            args['group'] = group
        inputs = [x, w] + ([b] if bias else [])
        if self.quantized:
            op_type = 'Int8ConvRelu' if relu else 'Int8Conv'
            return self.op(op_type, inputs, [name], **dict(args, **self._q(
                scale, 0 if relu else 128)))
        y = self.op('Conv', inputs, [name], **args)
        return self.op('Relu', [y], [y]) if relu else y

    def fc(self, x, name, scale):
        self.weights += [name + '_w', name + '_b']
        op_type = 'Int8FC' if self.quantized else 'FC'
        return self.op(op_type, [x, name + '_w', name + '_b'], [name], **self._q(scale, 128))

    def block(self, x, name, channels):
        """Inverted residual: expand to 2x `channels` (depthwise there), project back."""
        e = self.conv(x, name + '_pw', 1)
        d = self.conv(e, name + '_dw', 3, relu=False, group=2 * channels, bias=False)
        p = self.conv(d, name + '_pwl', 1, relu=False)
        if self.quantized:
            return self.op('Int8Sum', [p, x], [name], **self._q(0.08, 128))
        return self.op('Sum', [p, x], [name])

    def to_float(self, x, name):
        """A float NCHW view of x (the quantized net dequantizes for the RPN)."""
        if not self.quantized:
            return x
        return self.op('NHWC2NCHW', [self.op('Int8Dequantize', [x], [name + '_NHWC'])], [name])


def build(quantized):
    """The predict NetDef (see the module doc)."""
    b = _Builder(quantized)
    x = 'data'
    if quantized:
        x = b.op('Int8Quantize', [b.op('NCHW2NHWC', ['data'], ['data_NHWC'])], ['data_int8'],
                 Y_scale=1.0, Y_zero_point=0)
    x = b.conv(x, 'conv0', 3, stride=2)
    x = b.block(x, 'blk1', 16)
    x = b.conv(x, 'conv1', 3, stride=2)
    feature = b.block(x, 'blk2', 24)
    rpn = b.conv(feature, 'rpn_conv', 3)
    logits = b.to_float(b.conv(rpn, 'rpn_cls_logits', 1, relu=False, scale=0.04),
                        'rpn_cls_logits_f')
    deltas = b.to_float(b.conv(rpn, 'rpn_bbox_pred', 1, relu=False, scale=0.005),
                        'rpn_bbox_pred_f')
    probs = b.op('Sigmoid', [logits], ['rpn_cls_probs'])
    b.op('GenerateProposals', [probs, deltas, 'im_info', 'anchor'], ['rois', 'rpn_roi_probs'],
         spatial_scale=1.0 / STRIDE, pre_nms_topN=200, post_nms_topN=20, nms_thresh=0.7,
         min_size=0.0, correct_transform_coords=1)
    float_feature = feature
    if quantized:
        float_feature = b.op('Int8Dequantize', [feature], ['feature_f'])
    pooled = b.op('RoIAlign', [float_feature, 'rois'], ['roi_features'], pooled_h=6, pooled_w=6,
                  spatial_scale=1.0 / STRIDE, sampling_ratio=0, order=b.order)
    if quantized:
        pooled = b.op('Int8Quantize', [pooled], ['roi_features_int8'], Y_scale=0.05,
                      Y_zero_point=128)
    head = b.conv(pooled, 'head', 1)
    pool_args = dict(kernel=3, stride=1, order=b.order)
    if quantized:
        head = b.op('Int8AveragePool', [head], ['head_avg'], Y_scale=0.04, Y_zero_point=0,
                    **pool_args)
        cls = b.op('Int8Softmax', [b.fc(head, 'cls_score', 0.08)], ['cls_prob_int8'],
                   Y_scale=1.0 / 256, Y_zero_point=0)
        cls = b.op('Int8Dequantize', [cls], ['cls_prob'])
        box = b.op('Int8Dequantize', [b.fc(head, 'bbox_pred', 0.005)], ['bbox_pred_f'])
    else:
        head = b.op('AveragePool', [head], ['head_avg'], **pool_args)
        cls = b.op('Softmax', [b.fc(head, 'cls_score', 0)], ['cls_prob'])
        box = b.fc(head, 'bbox_pred', 0)
    b.op('BBoxTransform', ['rois', box, 'im_info'], ['pred_bbox'], correct_transform_coords=1)
    b.op('BoxWithNMSLimit', [cls, 'pred_bbox'], ['score_nms', 'bbox_nms', 'class_nms'],
         score_thresh=0.05, nms=0.3, detections_per_im=10, soft_nms_enabled=1,
         soft_nms_method='linear')
    b.op('ConstantFill', [], ['mask_fcn_probs'], shape=[1])
    b.op('IsEmpty', ['bbox_nms'], ['is_bbox_rois_empty'])
    top = b.ops
    b.ops = []
    _mask_head(b, float_feature)
    mask_net = doppio_pb2.NetDef(name='mask_net', op=b.ops)
    top.append(core.CreateOperator('If', ['is_bbox_rois_empty'], [],
                                   then_net=doppio_pb2.NetDef(name='emptynet'),
                                   else_net=mask_net))
    net = doppio_pb2.NetDef(name='mobile_detector_' + ('int8' if quantized else 'fp32'), op=top)
    net.external_input.extend(['data', 'im_info', 'anchor'] + b.weights)
    net.external_output.extend(['score_nms', 'bbox_nms', 'class_nms', 'mask_fcn_probs'])
    return net


def _mask_head(b, float_feature):
    """RoIAlign on the detections, a conv, 2x nearest upsampling, per-class
    mask logits, Sigmoid; then the boxes back to the original image."""
    pooled = b.op('RoIAlign', [float_feature, 'bbox_nms'], ['mask_pool'], pooled_h=6, pooled_w=6,
                  spatial_scale=1.0 / STRIDE, sampling_ratio=0, order=b.order)
    if b.quantized:
        pooled = b.op('Int8Quantize', [pooled], ['mask_pool_int8'], Y_scale=0.05,
                      Y_zero_point=128)
        x = b.conv(pooled, 'mask_conv', 3)
        x = b.op('Int8ResizeNearest', [x], ['mask_up'], width_scale=2.0, height_scale=2.0,
                 Y_scale=0.05, Y_zero_point=0, order='NHWC')
        logits = b.to_float(b.conv(x, 'mask_fcn_logits', 1, relu=False, scale=0.05),
                            'mask_fcn_logits_f')
    else:
        x = b.conv(pooled, 'mask_conv', 3)
        x = b.op('ResizeNearest', [x], ['mask_up'], width_scale=2.0, height_scale=2.0)
        logits = b.conv(x, 'mask_fcn_logits', 1, relu=False)
    b.op('Sigmoid', [logits], ['mask_fcn_probs'])
    b.op('Slice', ['im_info'], ['im_scale'], starts=[0, 2], ends=[-1, -1])
    b.op('Div', ['bbox_nms', 'im_scale'], ['bbox_nms'])
