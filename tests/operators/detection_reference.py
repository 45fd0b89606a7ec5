"""numpy references for the detection ops' tests, written from Detectron's
lib/utils/boxes.py formulas (boxes x1, y1, x2, y2; plus_one 1 is Caffe2's
legacy_plus_one)."""
import numpy as np

CLIP = np.log(1000.0 / 16.0)


def bbox_transform(boxes, deltas, weights=(1.0, 1.0, 1.0, 1.0), correct=False, plus_one=1.0):
    boxes, deltas = boxes.astype(np.float64), deltas.astype(np.float64)
    widths = boxes[:, 2] - boxes[:, 0] + plus_one
    heights = boxes[:, 3] - boxes[:, 1] + plus_one
    ctr_x = boxes[:, 0] + 0.5 * widths
    ctr_y = boxes[:, 1] + 0.5 * heights
    wx, wy, ww, wh = weights
    dx, dy = deltas[:, 0::4] / wx, deltas[:, 1::4] / wy
    dw = np.minimum(deltas[:, 2::4] / ww, CLIP)
    dh = np.minimum(deltas[:, 3::4] / wh, CLIP)
    px = dx * widths[:, None] + ctr_x[:, None]
    py = dy * heights[:, None] + ctr_y[:, None]
    pw = np.exp(dw) * widths[:, None]
    ph = np.exp(dh) * heights[:, None]
    off = plus_one if correct else 0.0
    out = np.zeros(deltas.shape)
    out[:, 0::4] = px - 0.5 * pw
    out[:, 1::4] = py - 0.5 * ph
    out[:, 2::4] = px + 0.5 * pw - off
    out[:, 3::4] = py + 0.5 * ph - off
    return out


def clip_boxes(boxes, height, width, plus_one=1.0):
    out = boxes.copy()
    out[:, 0::4] = np.clip(boxes[:, 0::4], 0, width - plus_one)
    out[:, 1::4] = np.clip(boxes[:, 1::4], 0, height - plus_one)
    out[:, 2::4] = np.clip(boxes[:, 2::4], 0, width - plus_one)
    out[:, 3::4] = np.clip(boxes[:, 3::4], 0, height - plus_one)
    return out


def iou(box, others, plus_one):
    w = np.maximum(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]) + plus_one, 0)
    h = np.maximum(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]) + plus_one, 0)
    inter = w * h
    area = lambda b: (b[..., 2] - b[..., 0] + plus_one) * (b[..., 3] - b[..., 1] + plus_one)
    return inter / (area(box) + area(others) - inter)


def rotated_corners(box):
    """The corners of (ctr_x, ctr_y, w, h, angle): the angle in degrees,
    counter-clockwise on the screen (y pointing down)."""
    cx, cy, w, h, angle = [float(v) for v in box]
    t = np.deg2rad(angle)
    rotation = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    local = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    return local @ rotation.T + [cx, cy]


def rotated_iou(box, others, plus_one=None):
    """IoU of rotated boxes, their intersection computed by Shapely."""
    from shapely.geometry import Polygon
    a = Polygon(rotated_corners(box))
    out = []
    for other in np.atleast_2d(others):
        b = Polygon(rotated_corners(other))
        inter = a.intersection(b).area
        union = box[2] * box[3] + other[2] * other[3] - inter
        out.append(0.0 if inter == 0 else inter / union)
    return np.array(out)


def bbox_transform_rotated(boxes, deltas, weights=(1.0, 1.0, 1.0, 1.0), bound=(True, -90, 90)):
    """RRPN's box transform: centers move by dx, dy times the size, sizes
    scale by exp(dw), exp(dh) (capped), the angle turns by da radians and is
    folded once into [lo, hi]."""
    boxes, deltas = boxes.astype(np.float64), deltas.astype(np.float64)
    out = np.zeros(deltas.shape)
    wx, wy, ww, wh = weights
    for k in range(deltas.shape[1] // 5):
        d = deltas[:, 5 * k:5 * k + 5]
        out[:, 5 * k] = d[:, 0] / wx * boxes[:, 2] + boxes[:, 0]
        out[:, 5 * k + 1] = d[:, 1] / wy * boxes[:, 3] + boxes[:, 1]
        out[:, 5 * k + 2] = np.exp(np.minimum(d[:, 2] / ww, CLIP)) * boxes[:, 2]
        out[:, 5 * k + 3] = np.exp(np.minimum(d[:, 3] / wh, CLIP)) * boxes[:, 3]
        angle = d[:, 4] * 180.0 / np.pi + boxes[:, 4]
        on, lo, hi = bound
        if on:
            angle = np.where(angle < lo, angle + (hi - lo), np.where(angle > hi, angle - (hi - lo),
                                                                     angle))
        out[:, 5 * k + 4] = angle
    return out


def clip_rotated(boxes, height, width, angle_thresh, plus_one):
    """Boxes within angle_thresh degrees of upright clipped as upright boxes."""
    out = boxes.copy()
    for k in range(boxes.shape[1] // 5):
        b = out[:, 5 * k:5 * k + 5]
        upright = np.abs(b[:, 4]) <= angle_thresh
        xyxy = np.stack([b[:, 0] - (b[:, 2] - plus_one) / 2, b[:, 1] - (b[:, 3] - plus_one) / 2,
                         b[:, 0] + (b[:, 2] - plus_one) / 2, b[:, 1] + (b[:, 3] - plus_one) / 2],
                        axis=1)
        xyxy = clip_boxes(xyxy, height, width, plus_one)
        ctrwh = np.stack([(xyxy[:, 0] + xyxy[:, 2]) / 2, (xyxy[:, 1] + xyxy[:, 3]) / 2,
                          xyxy[:, 2] - xyxy[:, 0] + plus_one, xyxy[:, 3] - xyxy[:, 1] + plus_one],
                         axis=1)
        b[upright, :4] = ctrwh[upright]
    return out


def nms(boxes, order, threshold, plus_one, top_n=-1, overlap=iou):
    """Greedy NMS over `order` (best first), as Detectron's py_cpu_nms."""
    order = list(order)
    keep = []
    while order and (top_n < 0 or len(keep) < top_n):
        i = order.pop(0)
        keep.append(i)
        if order:
            overlaps = overlap(boxes[i], boxes[order], plus_one)
            order = [k for k, o in zip(order, overlaps) if o <= threshold]
    return keep


def soft_nms(boxes, scores, indices, sigma, threshold, min_score, method, plus_one, overlap=iou):
    """Detectron's cython soft-NMS; returns (keep, decayed scores)."""
    scores = scores.astype(np.float64).copy()
    pending, keep = list(indices), []
    while pending:
        best = max(range(len(pending)), key=lambda j: (scores[pending[j]], -j))
        i = pending[best]
        keep.append(i)
        pending[0], pending[best] = pending[best], pending[0]
        rest = []
        for k in pending[1:]:
            o = overlap(boxes[i], boxes[k:k + 1], plus_one)[0]
            if method == "linear":
                w = 1 - o if o > threshold else 1.0
            elif method == "gaussian":
                w = np.exp(-o * o / sigma)
            else:
                w = 0.0 if o > threshold else 1.0
            scores[k] *= w
            if scores[k] >= min_score:
                rest.append(k)
        pending = rest
    return keep, scores


def _unscaled_size(height, width, scale):
    """BBoxTransform's image size before scaling: Caffe2 rounds it in float32."""
    return (int(np.float32(height) / np.float32(scale) + np.float32(0.5)),
            int(np.float32(width) / np.float32(scale) + np.float32(0.5)))


def bbox_transform_op(rois, deltas, im_info, weights, apply_scale, correct, plus_one):
    """Caffe2's BBoxTransform: rois [R, 5] in scaled-image coordinates,
    boxes moved, clipped to the unscaled image, optionally scaled back."""
    out = np.zeros(deltas.shape)
    for image, (height, width, scale) in enumerate(im_info):
        rows = rois[:, 0] == image
        boxes = rois[rows, 1:] / scale
        moved = bbox_transform(boxes, deltas[rows], weights, correct, plus_one)
        h_img, w_img = _unscaled_size(height, width, scale)
        out[rows] = clip_boxes(moved, h_img, w_img, plus_one) * (scale if apply_scale else 1)
    return out


def bbox_transform_rotated_op(rois, deltas, im_info, weights, apply_scale, angle_thresh,
                              plus_one):
    """Caffe2's BBoxTransform with rotated=1: rois [R, 6] (image index, ctr_x,
    ctr_y, w, h, angle); sizes and centers unscaled (not the angle), moved,
    clipped when upright, scaled back."""
    out = np.zeros(deltas.shape)
    for image, (height, width, scale) in enumerate(im_info):
        rows = rois[:, 0] == image
        unscaled = rois[rows, 1:].astype(np.float64)
        unscaled[:, :4] /= scale
        moved = bbox_transform_rotated(unscaled, deltas[rows], weights)
        h_img, w_img = _unscaled_size(height, width, scale)
        clipped = clip_rotated(moved, h_img, w_img, angle_thresh, plus_one)
        if apply_scale:
            for k in range(deltas.shape[1] // 5):
                clipped[:, 5 * k:5 * k + 4] *= scale
        out[rows] = clipped
    return out


def generate_proposals(scores, deltas, im_info, anchors, stride, pre, post, thresh, min_size,
                       correct, plus_one):
    """Detectron's RPN proposal step (GenerateProposals): rois [n, 5], probs."""
    n_img, A, H, W = scores.shape
    sx, sy = np.meshgrid(np.arange(W) * stride, np.arange(H) * stride)
    shifts = np.stack([sx.ravel(), sy.ravel(), sx.ravel(), sy.ravel()], axis=1)
    all_anchors = (anchors[None, :, :] + shifts[:, None, :]).reshape(-1, 4)
    rois, probs = [], []
    for n in range(n_img):
        height, width, scale = im_info[n].astype(np.float64)
        d = deltas[n].reshape(A, 4, H, W).transpose(2, 3, 0, 1).reshape(-1, 4)
        s = scores[n].transpose(1, 2, 0).reshape(-1)
        boxes = clip_boxes(bbox_transform(all_anchors, d, correct=correct, plus_one=plus_one),
                           height, width, plus_one)
        ws = boxes[:, 2] - boxes[:, 0] + plus_one
        hs = boxes[:, 3] - boxes[:, 1] + plus_one
        keep = np.where((ws >= min_size * scale) & (hs >= min_size * scale) &
                        (boxes[:, 0] + ws / 2 < width) & (boxes[:, 1] + hs / 2 < height))[0]
        order = keep[np.argsort(-s[keep], kind="stable")]
        if 0 < pre < len(order):
            order = order[:pre]
        kept = nms(boxes, list(order), thresh, plus_one, post if post > 0 else -1)
        rois += [[n] + list(boxes[i]) for i in kept]
        probs += [s[i] for i in kept]
    return np.array(rois).reshape(-1, 5), np.array(probs)


def generate_proposals_rotated(scores, deltas, im_info, anchors, stride, pre, post, thresh,
                               min_size, angle_thresh, plus_one):
    """RRPN's proposal step: rotated anchors (ctr_x, ctr_y, w, h, angle)
    shifted by their centers, moved, clipped when upright, filtered by size
    and center, NMS by rotated IoU: rois [n, 6], probs."""
    n_img, A, H, W = scores.shape
    sx, sy = np.meshgrid(np.arange(W) * stride, np.arange(H) * stride)
    shifts = np.stack([sx.ravel(), sy.ravel()], axis=1)
    all_anchors = np.repeat(anchors[None, :, :], len(shifts), axis=0).astype(np.float64)
    all_anchors[:, :, :2] += shifts[:, None, :]
    all_anchors = all_anchors.reshape(-1, 5)
    rois, probs = [], []
    for n in range(n_img):
        height, width, scale = im_info[n].astype(np.float64)
        d = deltas[n].reshape(A, 5, H, W).transpose(2, 3, 0, 1).reshape(-1, 5)
        s = scores[n].transpose(1, 2, 0).reshape(-1)
        boxes = clip_rotated(bbox_transform_rotated(all_anchors, d), height, width, angle_thresh,
                             plus_one)
        keep = np.where((boxes[:, 2] >= min_size * scale) & (boxes[:, 3] >= min_size * scale) &
                        (boxes[:, 0] < width) & (boxes[:, 1] < height))[0]
        order = keep[np.argsort(-s[keep], kind="stable")]
        if 0 < pre < len(order):
            order = order[:pre]
        kept = nms(boxes, list(order), thresh, plus_one, post if post > 0 else -1,
                   overlap=rotated_iou)
        rois += [[n] + list(boxes[i]) for i in kept]
        probs += [s[i] for i in kept]
    return np.array(rois).reshape(-1, 6), np.array(probs)


def box_with_nms_limit(scores, boxes, splits, thresh, nms_threshold, limit, soft, plus_one,
                       rotated=False, agnostic=False, include_bg=True, output_bg=True):
    """BoxWithNMSLimit: dict of scores, boxes, classes, splits, keeps, sizes.
    Class j's scores are column j - 1 + include_bg; its boxes column 0 when
    class-agnostic, else j (j - 1 without the background's boxes)."""
    out = {"scores": [], "boxes": [], "classes": [], "splits": [], "keeps": [], "sizes": []}
    start = 0
    classes = scores.shape[1]
    dim = 5 if rotated else 4
    overlap = rotated_iou if rotated else iou
    score_col = lambda j: j - 1 + int(include_bg)
    box_col = lambda j: 0 if agnostic else (j if include_bg else j - 1)
    for count in splits:
        s, b = scores[start:start + count], boxes[start:start + count]
        work = s.astype(np.float64).copy()
        keeps = [[]]
        for j in range(1, classes):
            c = score_col(j)
            above = [i for i in range(count) if s[i, c] > thresh]
            cb = b[:, dim * box_col(j):dim * box_col(j) + dim].astype(np.float64)
            if soft:
                keep, decayed = soft_nms(cb, s[:, c], above, 0.5, nms_threshold, 0.001, soft,
                                         plus_one, overlap)
                work[:, c] = decayed
            else:
                order = sorted(above, key=lambda i: -s[i, c])
                keep = nms(cb, order, nms_threshold, plus_one, overlap=overlap)
            keeps.append(keep)
        # Exactly `limit` best scores; of ties at the cut the lower class,
        # then the earlier kept box (Caffe2 keeps exactly the limit).
        ranked = sorted(((-work[i, score_col(j)], j, p) for j in range(1, classes)
                         for p, i in enumerate(keeps[j])))
        if limit > 0 and len(ranked) > limit:
            chosen = set((j, p) for _, j, p in ranked[:limit])
            keeps = [[i for p, i in enumerate(k) if (j, p) in chosen]
                     for j, k in enumerate(keeps)]
        for j, keep in enumerate(keeps):
            for i in keep:
                out["scores"].append(work[i, score_col(j)])
                out["boxes"].append(b[i, dim * box_col(j):dim * box_col(j) + dim])
                out["classes"].append(j if output_bg else j - 1)
                out["keeps"].append(i)
            out["sizes"].append(len(keep))
        out["splits"].append(sum(len(k) for k in keeps))
        start += count
    return out
