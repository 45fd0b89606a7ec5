"""BBoxTransform against numpy (Detectron's box formulas), its options,
batch splits, and the error paths."""
import numpy as np
import pytest

import detection_reference as ref
import op_harness as h


def _case(rng, per_image, classes):
    rois = []
    for image, count in enumerate(per_image):
        xy = rng.uniform(0, 300, (count, 2))
        wh = rng.uniform(1, 150, (count, 2))
        rois.append(np.concatenate([np.full((count, 1), image), xy, xy + wh], axis=1))
    rois = np.concatenate(rois).astype(np.float32)
    deltas = rng.randn(len(rois), 4 * classes).astype(np.float32)
    deltas[::5, 2] = 9.0  # past the dw clip
    im_info = np.array([[400, 500, 1.6], [360, 300, 0.8], [200, 200, 1.0]][:len(per_image)],
                       np.float32)
    return rois, deltas, im_info


@pytest.mark.parametrize("weights", [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)])
@pytest.mark.parametrize("apply_scale", [True, False])
@pytest.mark.parametrize("correct,plus_one", [(False, True), (True, True), (True, False)])
def test_bbox_transform_matches_numpy(weights, apply_scale, correct, plus_one):
    rng = np.random.RandomState(int(weights[0]) + 2 * apply_scale + 4 * correct)
    rois, deltas, im_info = _case(rng, [6, 0, 5], 3)
    op = h.make_op("BBoxTransform", ["r", "d", "i"], ["b", "s"], weights=list(weights),
                   apply_scale=int(apply_scale), correct_transform_coords=int(correct),
                   legacy_plus_one=int(plus_one))
    boxes, splits = h.run_op(op, [rois, deltas, im_info])
    want = ref.bbox_transform_op(rois, deltas, im_info, weights, apply_scale, correct, float(plus_one))
    np.testing.assert_allclose(boxes, want, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(splits, [6, 0, 5])


@pytest.mark.parametrize("plus_one", [True, False])
def test_rotated_bbox_transform_matches_numpy(plus_one):
    rng = np.random.RandomState(7)
    counts, classes = [5, 4], 3
    rois = []
    for image, count in enumerate(counts):
        ctr = rng.uniform(0, 300, (count, 2))
        size = rng.uniform(4, 120, (count, 2))
        angle = rng.choice([0.0, 0.8, -45.0, 70.0, -89.0], count)
        rois.append(np.concatenate([np.full((count, 1), image), ctr, size, angle[:, None]], 1))
    rois = np.concatenate(rois).astype(np.float32)
    deltas = (rng.randn(len(rois), 5 * classes) * 0.4).astype(np.float32)
    im_info = np.array([[400, 500, 1.6], [360, 300, 0.8]], np.float32)
    op = h.make_op("BBoxTransform", ["r", "d", "i"], ["b", "s"], rotated=1,
                   weights=[10.0, 10.0, 5.0, 5.0], legacy_plus_one=int(plus_one))
    boxes, splits = h.run_op(op, [rois, deltas, im_info])
    want = ref.bbox_transform_rotated_op(rois, deltas, im_info, (10.0, 10.0, 5.0, 5.0), True,
                                         1.0, float(plus_one))
    np.testing.assert_allclose(boxes, want, rtol=1e-5, atol=2e-3)
    np.testing.assert_array_equal(splits, counts)
    h.assert_op_error(op, [rois, deltas[:, :12], im_info], "'d'", "5 K")
    h.assert_op_error(h.make_op("BBoxTransform", ["r", "d", "i"], ["b"]),
                      [rois, deltas, im_info], "'r'", "[M, 4] or [M, 5]")


def test_bbox_transform_four_column_rois():
    rng = np.random.RandomState(4)
    rois, deltas, im_info = _case(rng, [7], 2)
    op = h.make_op("BBoxTransform", ["r", "d", "i"], ["b"])
    got = h.run_op(op, [np.ascontiguousarray(rois[:, 1:]), deltas, im_info])[0]
    np.testing.assert_allclose(got, ref.bbox_transform_op(rois, deltas, im_info, (1, 1, 1, 1), True, False,
                                               1.0), rtol=1e-5, atol=1e-3)


def test_bbox_transform_bad_input():
    rng = np.random.RandomState(5)
    rois, deltas, im_info = _case(rng, [2, 2], 1)
    op = h.make_op("BBoxTransform", ["r", "d", "i"], ["b"])
    h.assert_op_error(op, [rois[::-1].copy(), deltas, im_info], "grouped by image")
    bad = rois.copy()
    bad[0, 0] = 7
    h.assert_op_error(op, [bad, deltas, im_info], "RoI 0", "batch index 7", "images of im_info")
    h.assert_op_error(op, [rois, deltas[:, :3], im_info], "'d'", "4 K")
    h.assert_op_error(op, [rois, deltas, im_info[:, :2]], "'i'", "[B, 3]")
    zero = im_info.copy()
    zero[1, 2] = 0
    h.assert_op_error(op, [rois, deltas, zero], "im_info row 1", "scale")
    for bad in (np.nan, np.inf, 1e30):
        info = im_info.copy()
        info[0, 1] = bad
        h.assert_op_error(op, [rois, deltas, info], "im_info row 0", "width")
    h.assert_op_error(op, [np.ascontiguousarray(rois[:, 1:]), deltas, im_info], "one image")
    h.assert_op_error(op, [rois.astype(np.float64), deltas, im_info], "'r'", "float32")
    h.assert_op_error(h.make_op("BBoxTransform", ["r", "d", "i"], ["b"], weights=[1.0, 0.0, 1.0,
                                                                                 1.0]),
                      [rois, deltas, im_info], "weights[1]")


if __name__ == "__main__":
    h.run_main(__file__)
