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


def nms(boxes, order, threshold, plus_one, top_n=-1):
    """Greedy NMS over `order` (best first), as Detectron's py_cpu_nms."""
    order = list(order)
    keep = []
    while order and (top_n < 0 or len(keep) < top_n):
        i = order.pop(0)
        keep.append(i)
        if order:
            overlaps = iou(boxes[i], boxes[order], plus_one)
            order = [k for k, o in zip(order, overlaps) if o <= threshold]
    return keep


def soft_nms(boxes, scores, indices, sigma, threshold, min_score, method, plus_one):
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
            o = iou(boxes[i], boxes[k:k + 1], plus_one)[0]
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


def bbox_transform_op(rois, deltas, im_info, weights, apply_scale, correct, plus_one):
    """Caffe2's BBoxTransform: rois [R, 5] in scaled-image coordinates,
    boxes moved, clipped to the unscaled image, optionally scaled back."""
    out = np.zeros(deltas.shape)
    for image, (height, width, scale) in enumerate(im_info):
        rows = rois[:, 0] == image
        boxes = rois[rows, 1:] / scale
        moved = bbox_transform(boxes, deltas[rows], weights, correct, plus_one)
        # Caffe2 rounds the unscaled size in float32
        h_img = int(np.float32(height) / np.float32(scale) + np.float32(0.5))
        w_img = int(np.float32(width) / np.float32(scale) + np.float32(0.5))
        out[rows] = clip_boxes(moved, h_img, w_img, plus_one) * (scale if apply_scale else 1)
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


def box_with_nms_limit(scores, boxes, splits, thresh, nms_threshold, limit, soft, plus_one):
    """BoxWithNMSLimit: dict of scores, boxes, classes, splits, keeps, sizes."""
    out = {"scores": [], "boxes": [], "classes": [], "splits": [], "keeps": [], "sizes": []}
    start = 0
    classes = scores.shape[1]
    for count in splits:
        s, b = scores[start:start + count], boxes[start:start + count]
        work = s.astype(np.float64).copy()
        keeps = [[]]
        for j in range(1, classes):
            above = [i for i in range(count) if s[i, j] > thresh]
            cb = b[:, 4 * j:4 * j + 4].astype(np.float64)
            if soft:
                keep, decayed = soft_nms(cb, s[:, j], above, 0.5, nms_threshold, 0.001, soft,
                                         plus_one)
                work[:, j] = decayed
            else:
                order = sorted(above, key=lambda i: -s[i, j])
                keep = nms(cb, order, nms_threshold, plus_one)
            keeps.append(keep)
        # Exactly `limit` best scores; of ties at the cut the lower class,
        # then the earlier kept box (Caffe2 keeps exactly the limit).
        ranked = sorted(((-work[i, j], j, p) for j in range(1, classes)
                         for p, i in enumerate(keeps[j])))
        if limit > 0 and len(ranked) > limit:
            chosen = set((j, p) for _, j, p in ranked[:limit])
            keeps = [[i for p, i in enumerate(k) if (j, p) in chosen]
                     for j, k in enumerate(keeps)]
        for j, keep in enumerate(keeps):
            for i in keep:
                out["scores"].append(work[i, j])
                out["boxes"].append(b[i, 4 * j:4 * j + 4])
                out["classes"].append(j)
                out["keeps"].append(i)
            out["sizes"].append(len(keep))
        out["splits"].append(sum(len(k) for k in keeps))
        start += count
    return out
