"""BoxWithNMSLimit against numpy NMS / soft-NMS (and torchvision.ops.nms
without legacy_plus_one), the per-image limit, batch splits and outputs,
and the error paths."""
import numpy as np
import pytest

import detection_reference as ref
import op_harness as h


def _case(rng, n, classes):
    xy = rng.uniform(0, 100, (n, classes, 2))
    wh = rng.uniform(5, 60, (n, classes, 2))
    boxes = np.concatenate([xy, xy + wh], axis=2).reshape(n, 4 * classes).astype(np.float32)
    scores = rng.uniform(0, 1, (n, classes)).astype(np.float32)
    return scores, boxes


@pytest.mark.parametrize("soft", [None, "linear", "gaussian", "hard"])
@pytest.mark.parametrize("limit", [100, 7, 0])
@pytest.mark.parametrize("plus_one", [True, False])
def test_box_with_nms_limit_matches_numpy(soft, limit, plus_one):
    rng = np.random.RandomState(limit + (3 if soft else 0) + plus_one)
    scores, boxes = _case(rng, 40, 4)
    splits = np.array([25, 0, 15], np.float32)
    args = dict(score_thresh=0.2, nms=0.4, detections_per_im=limit,
                legacy_plus_one=int(plus_one))
    if soft:
        args.update(soft_nms_enabled=1, soft_nms_method=soft)
    op = h.make_op("BoxWithNMSLimit", ["s", "b", "n"],
                   ["os", "ob", "oc", "on", "ok", "oz"], **args)
    got = h.run_op(op, [scores, boxes, splits])
    want = ref.box_with_nms_limit(scores, boxes, [25, 0, 15], 0.2, 0.4, limit, soft, float(plus_one))
    np.testing.assert_array_equal(got[4], want["keeps"])
    np.testing.assert_array_equal(got[2], want["classes"])
    np.testing.assert_allclose(got[0], want["scores"], rtol=1e-5)
    np.testing.assert_array_equal(got[1], np.array(want["boxes"]).reshape(-1, 4))
    np.testing.assert_array_equal(got[3], want["splits"])
    np.testing.assert_array_equal(got[5], np.array(want["sizes"]).reshape(3, 4))


def test_box_with_nms_limit_keeps_exactly_the_limit_of_tied_scores():
    # Scores of a quantized net (multiples of 1/8) tie at the cut: Caffe2
    # keeps exactly detections_per_im, the lower class first among ties.
    rng = np.random.RandomState(4)
    scores, boxes = _case(rng, 30, 3)
    scores = np.round(scores * 8) / 8
    op = h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc", "on", "ok", "oz"],
                   score_thresh=0.05, nms=0.9, detections_per_im=7)
    got = h.run_op(op, [scores, boxes])
    want = ref.box_with_nms_limit(scores, boxes, [30], 0.05, 0.9, 7, None, 1.0)
    assert len(got[0]) == 7
    untied = ref.box_with_nms_limit(scores, boxes, [30], 0.05, 0.9, 0, None, 1.0)
    assert np.sum(np.array(untied["scores"]) >= np.sort(got[0])[0]) > 7  # a tie was cut
    np.testing.assert_array_equal(got[4], want["keeps"])
    np.testing.assert_array_equal(got[2], want["classes"])


def _rotated_case(rng, n, classes):
    ctr = rng.uniform(0, 100, (n, classes, 2))
    size = rng.uniform(10, 50, (n, classes, 2))
    angle = rng.uniform(-90, 90, (n, classes, 1))
    boxes = np.concatenate([ctr, size, angle], axis=2).reshape(n, 5 * classes).astype(np.float32)
    return rng.uniform(0, 1, (n, classes)).astype(np.float32), boxes


@pytest.mark.parametrize("soft", [None, "linear", "gaussian"])
def test_rotated_nms_matches_shapely(soft):
    rng = np.random.RandomState(11)
    scores, boxes = _rotated_case(rng, 60, 3)
    args = dict(score_thresh=0.1, nms=0.3, detections_per_im=25, rotated=1)
    if soft:
        args.update(soft_nms_enabled=1, soft_nms_method=soft)
    op = h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc", "on", "ok", "oz"], **args)
    got = h.run_op(op, [scores, boxes])
    want = ref.box_with_nms_limit(scores, boxes, [60], 0.1, 0.3, 25, soft, 1.0, rotated=True)
    np.testing.assert_array_equal(got[4], want["keeps"])
    np.testing.assert_array_equal(got[2], want["classes"])
    np.testing.assert_allclose(got[0], want["scores"], rtol=1e-5)
    np.testing.assert_array_equal(got[1], np.array(want["boxes"]).reshape(-1, 5))
    if not soft:  # the case has overlaps: NMS suppressed some boxes
        unlimited = ref.box_with_nms_limit(scores, boxes, [60], 0.1, 0.3, 0, None, 1.0,
                                           rotated=True)
        assert len(unlimited["scores"]) < np.sum(scores[:, 1:] > 0.1)


@pytest.mark.parametrize("agnostic,include_bg,output_bg", [
    (True, True, True), (False, False, True), (False, False, False), (True, False, False)])
def test_box_layouts_and_class_numbering(agnostic, include_bg, output_bg):
    rng = np.random.RandomState(12)
    scores, boxes = _case(rng, 30, 4)
    if agnostic:
        boxes = boxes[:, :4].copy()
    elif not include_bg:
        boxes = boxes[:, 4:].copy()
    op = h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc", "on", "ok", "oz"],
                   score_thresh=0.3, nms=0.4, cls_agnostic_bbox_reg=int(agnostic),
                   input_boxes_include_bg_cls=int(include_bg),
                   output_classes_include_bg_cls=int(output_bg))
    got = h.run_op(op, [scores, boxes])
    want = ref.box_with_nms_limit(scores, boxes, [30], 0.3, 0.4, 100, None, 1.0,
                                  agnostic=agnostic, include_bg=include_bg, output_bg=output_bg)
    np.testing.assert_array_equal(got[4], want["keeps"])
    np.testing.assert_array_equal(got[2], want["classes"])
    np.testing.assert_array_equal(got[0], np.float32(want["scores"]))
    np.testing.assert_array_equal(got[1], np.array(want["boxes"]).reshape(-1, 4))
    assert (got[2].min() == 0) == (not output_bg)


def test_box_with_nms_limit_matches_torchvision_nms():
    torch = pytest.importorskip("torch")
    tv_ops = pytest.importorskip("torchvision.ops")
    rng = np.random.RandomState(9)
    scores, boxes = _case(rng, 60, 2)
    op = h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc"], score_thresh=0.0, nms=0.5,
                   detections_per_im=0, legacy_plus_one=0)
    got_scores, got_boxes, _ = h.run_op(op, [scores, boxes])
    keep = tv_ops.nms(torch.from_numpy(boxes[:, 4:]), torch.from_numpy(scores[:, 1]), 0.5).numpy()
    np.testing.assert_array_equal(got_boxes, boxes[keep, 4:])
    np.testing.assert_array_equal(got_scores, scores[keep, 1])


def test_box_with_nms_limit_nan_and_empty():
    scores = np.array([[0.1, np.nan], [0.2, 0.9], [0.3, 0.8]], np.float32)
    boxes = np.tile(np.array([0, 0, 10, 10], np.float32), (3, 2))
    boxes[2, 4:] = [50, 50, 60, 60]
    op = h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc"])
    got_scores, got_boxes, got_classes = h.run_op(op, [scores, boxes])
    np.testing.assert_array_equal(got_scores, np.float32([0.9, 0.8]))  # NaN never scores above
    empty = h.run_op(op, [np.zeros((0, 2), np.float32), np.zeros((0, 8), np.float32)])
    assert empty[0].shape == (0,) and empty[1].shape == (0, 4)


def test_box_with_nms_limit_bad_input():
    scores, boxes = _case(np.random.RandomState(1), 4, 3)
    op = h.make_op("BoxWithNMSLimit", ["s", "b", "n"], ["os", "ob", "oc"])
    h.assert_op_error(op, [scores, boxes[:, :8], np.array([4], np.float32)], "'b'", "12 columns")
    h.assert_op_error(op, [scores, boxes, np.array([3], np.float32)], "add up to 3")
    h.assert_op_error(op, [scores, boxes, np.array([2.5, 1.5], np.float32)], "batch_splits[0]")
    h.assert_op_error(op, [scores, boxes[:3], np.array([4], np.float32)], "'b'")
    h.assert_op_error(h.make_op("BoxWithNMSLimit", ["s", "b"], ["os", "ob", "oc"],
                                soft_nms_method="cubic"), [scores, boxes], "cubic")


if __name__ == "__main__":
    h.run_main(__file__)
