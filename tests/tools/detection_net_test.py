"""A Faster R-CNN shaped net (Detectron's C4 layout: trunk with
AffineChannel, RPN head, GenerateProposals, RoIAlign, box head, Softmax,
BBoxTransform, BoxWithNMSLimit) with random weights, run through
tools/run_net as a user would (inference passes on, and off), every stage's
output checked against torch / torchvision / numpy given that stage's
inputs, so one rounding difference upstream cannot reorder proposals
downstream."""
import os
import subprocess
import tempfile
import unittest

import numpy as np

import detection_reference as ref
import op_harness as h
from doppio.proto import doppio_pb2
from tool_paths import runfile

torch = None
try:
    import torch
    import torchvision.ops as tv_ops
except ImportError:  # pragma: no cover
    tv_ops = None

RUN_NET = runfile("tools/run_net")
CLASSES = 4
ANCHORS = np.array([[-6, -6, 9, 9], [-14, -6, 17, 9], [-6, -14, 9, 17]], np.float32)
STAGES = ["res4", "rpn_cls_probs", "rpn_bbox_pred", "rois", "roi_feat", "pool", "cls_prob",
          "bbox_pred", "pred_bbox", "batch_splits", "score_nms", "bbox_nms", "class_nms"]


def _weights(rng):
    shapes = {"c1_w": (16, 3, 3, 3), "c1_s": (16,), "c1_b": (16,), "c2_w": (32, 16, 3, 3),
              "c2_s": (32,), "c2_b": (32,), "rpn_w": (32, 32, 3, 3), "rpn_b": (32,),
              "cls_w": (3, 32, 1, 1), "cls_b": (3,), "box_w": (12, 32, 1, 1), "box_b": (12,),
              "head_w": (32, 32, 3, 3), "head_b": (32,), "fc_cls_w": (CLASSES, 32),
              "fc_cls_b": (CLASSES,), "fc_box_w": (4 * CLASSES, 32), "fc_box_b": (4 * CLASSES,)}
    w = {k: (rng.randn(*s) * (0.3 if len(s) > 1 else 0.1)).astype(np.float32)
         for k, s in shapes.items()}
    w["c1_s"] += 1
    w["c2_s"] += 1
    return w


def _nets(w):
    init = doppio_pb2.NetDef(name="init")
    for name, value in sorted(w.items()):
        init.op.append(h.make_op("GivenTensorFill", [], [name], shape=list(value.shape),
                           values=[float(v) for v in value.flat]))
    init.op.append(h.make_op("GivenTensorFill", [], ["anchors"], shape=[3, 4],
                       values=[float(v) for v in ANCHORS.flat]))
    net = doppio_pb2.NetDef(name="faster_rcnn", external_input=["data", "im_info", "anchors"] +
                            sorted(w))
    net.external_output.extend(["score_nms", "bbox_nms", "class_nms"])
    net.op.extend([
        h.make_op("Conv", ["data", "c1_w"], ["c1"], kernel=3, pad=1, stride=2, no_bias=1),
        h.make_op("AffineChannel", ["c1", "c1_s", "c1_b"], ["c1"]),
        h.make_op("Relu", ["c1"], ["c1"]),
        h.make_op("Conv", ["c1", "c2_w"], ["c2"], kernel=3, pad=1, stride=2, no_bias=1),
        h.make_op("AffineChannel", ["c2", "c2_s", "c2_b"], ["c2"]),
        h.make_op("Relu", ["c2"], ["res4"]),
        h.make_op("Conv", ["res4", "rpn_w", "rpn_b"], ["rpn"], kernel=3, pad=1),
        h.make_op("Relu", ["rpn"], ["rpn"]),
        h.make_op("Conv", ["rpn", "cls_w", "cls_b"], ["rpn_cls_logits"], kernel=1),
        h.make_op("Sigmoid", ["rpn_cls_logits"], ["rpn_cls_probs"]),
        h.make_op("Conv", ["rpn", "box_w", "box_b"], ["rpn_bbox_pred"], kernel=1),
        h.make_op("GenerateProposals", ["rpn_cls_probs", "rpn_bbox_pred", "im_info", "anchors"],
            ["rois", "rois_probs"], spatial_scale=0.25, pre_nms_topN=200, post_nms_topN=30,
            nms_thresh=0.7, min_size=0.0, correct_transform_coords=1),
        h.make_op("RoIAlign", ["res4", "rois"], ["roi_feat"], spatial_scale=0.25, pooled_h=7,
            pooled_w=7, sampling_ratio=2),
        h.make_op("Conv", ["roi_feat", "head_w", "head_b"], ["head"], kernel=3, pad=1, stride=2),
        h.make_op("Relu", ["head"], ["head"]),
        h.make_op("AveragePool", ["head"], ["pool"], global_pooling=1),
        h.make_op("FC", ["pool", "fc_cls_w", "fc_cls_b"], ["cls_score"]),
        h.make_op("Softmax", ["cls_score"], ["cls_prob"]),
        h.make_op("FC", ["pool", "fc_box_w", "fc_box_b"], ["bbox_pred"]),
        h.make_op("BBoxTransform", ["rois", "bbox_pred", "im_info"], ["pred_bbox", "batch_splits"],
            weights=[10.0, 10.0, 5.0, 5.0], apply_scale=0, correct_transform_coords=1),
        h.make_op("BoxWithNMSLimit", ["cls_prob", "pred_bbox", "batch_splits"],
            ["score_nms", "bbox_nms", "class_nms"], score_thresh=0.05, nms=0.5,
            detections_per_im=20),
    ])
    return init, net


def _conv(x, w, b=None, stride=1, pad=0):
    out = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                     None if b is None else torch.from_numpy(b), stride, pad)
    return out.numpy()


def _affine_relu(x, s, b):
    return np.maximum(x * s[None, :, None, None] + b[None, :, None, None], 0)


@unittest.skipIf(tv_ops is None, "needs Debian's python3-torch and python3-torchvision")
class DetectionNetTest(unittest.TestCase):
    def run_net(self, folder, init, net, data, im_info, optimize):
        paths = {}
        for name, value in (("init.pb", init), ("net.pb", net)):
            paths[name] = os.path.join(folder, name)
            with open(paths[name], "wb") as f:
                f.write(value.SerializeToString())
        np.save(os.path.join(folder, "data.npy"), data)
        np.save(os.path.join(folder, "im_info.npy"), im_info)
        args = [RUN_NET, "--init_net", paths["init.pb"], "--net", paths["net.pb"],
                "--input", "data=" + os.path.join(folder, "data.npy"),
                "--input", "im_info=" + os.path.join(folder, "im_info.npy")]
        for stage in STAGES:
            args += ["--output", stage + "=" + os.path.join(folder, stage + ".npy")]
        if not optimize:
            args.append("--nooptimize")
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr)
        return {s: np.load(os.path.join(folder, s + ".npy")) for s in STAGES}

    def check_stages(self, w, data, im_info, got):
        close = dict(rtol=1e-4, atol=1e-4)
        c1 = _affine_relu(_conv(data, w["c1_w"], stride=2, pad=1), w["c1_s"], w["c1_b"])
        res4 = _affine_relu(_conv(c1, w["c2_w"], stride=2, pad=1), w["c2_s"], w["c2_b"])
        np.testing.assert_allclose(got["res4"], res4, **close)
        rpn = np.maximum(_conv(got["res4"], w["rpn_w"], w["rpn_b"], pad=1), 0)
        probs = 1 / (1 + np.exp(-_conv(rpn, w["cls_w"], w["cls_b"])))
        np.testing.assert_allclose(got["rpn_cls_probs"], probs, **close)
        np.testing.assert_allclose(got["rpn_bbox_pred"], _conv(rpn, w["box_w"], w["box_b"]),
                                   **close)
        rois, _ = ref.generate_proposals(got["rpn_cls_probs"], got["rpn_bbox_pred"], im_info,
                                         ANCHORS, 4.0, 200, 30, 0.7, 0.0, True, 1.0)
        self.assertEqual(len(rois), 30)
        np.testing.assert_allclose(got["rois"], rois, rtol=1e-5, atol=1e-3)
        feat = tv_ops.roi_align(torch.from_numpy(got["res4"]), torch.from_numpy(got["rois"]),
                                (7, 7), spatial_scale=0.25, sampling_ratio=2).numpy()
        np.testing.assert_allclose(got["roi_feat"], feat, **close)
        head = np.maximum(_conv(got["roi_feat"], w["head_w"], w["head_b"], stride=2, pad=1), 0)
        pool = head.mean(axis=(2, 3))
        np.testing.assert_allclose(got["pool"].reshape(pool.shape), pool, **close)
        score = pool @ w["fc_cls_w"].T + w["fc_cls_b"]
        prob = np.exp(score - score.max(1, keepdims=True))
        np.testing.assert_allclose(got["cls_prob"], prob / prob.sum(1, keepdims=True), **close)
        box = got["pool"].reshape(pool.shape) @ w["fc_box_w"].T + w["fc_box_b"]
        np.testing.assert_allclose(got["bbox_pred"], box, **close)
        moved = ref.clip_boxes(ref.bbox_transform(got["rois"][:, 1:], got["bbox_pred"],
                                                  (10, 10, 5, 5), correct=True), 64, 80)
        np.testing.assert_allclose(got["pred_bbox"], moved, rtol=1e-5, atol=1e-3)
        np.testing.assert_array_equal(got["batch_splits"], [30])
        want = ref.box_with_nms_limit(got["cls_prob"], got["pred_bbox"], [30], 0.05, 0.5, 20,
                                      None, 1.0)
        self.assertGreater(len(want["scores"]), 0)
        np.testing.assert_allclose(got["score_nms"], want["scores"], rtol=1e-6)
        np.testing.assert_array_equal(got["bbox_nms"], np.array(want["boxes"]).reshape(-1, 4))
        np.testing.assert_array_equal(got["class_nms"], want["classes"])

    def test_faster_rcnn_c4_through_run_net(self):
        rng = np.random.RandomState(0)
        w = _weights(rng)
        init, net = _nets(w)
        data = rng.uniform(-1, 1, (1, 3, 64, 80)).astype(np.float32)
        im_info = np.array([[64, 80, 1.0]], np.float32)
        for optimize in (True, False):
            with tempfile.TemporaryDirectory() as folder:
                got = self.run_net(folder, init, net, data, im_info, optimize)
            with self.subTest(optimize=optimize):
                self.check_stages(w, data, im_info, got)


if __name__ == "__main__":
    unittest.main()
