"""GenerateProposals against a numpy implementation of Detectron's RPN
proposal step, its top-N and size options, and the error paths."""
import numpy as np
import pytest

import detection_reference as ref
import op_harness as h


def _case(rng, n, A, H, W):
    sizes = rng.uniform(8, 64, (A, 2))
    anchors = np.concatenate([-sizes / 2, sizes / 2], axis=1).astype(np.float32)
    scores = rng.uniform(0, 1, (n, A, H, W)).astype(np.float32)
    deltas = (rng.randn(n, 4 * A, H, W) * 0.3).astype(np.float32)
    im_info = np.array([[H * 16 - 5, W * 16 - 9, 1.0], [H * 12, W * 14, 0.75]][:n], np.float32)
    return scores, deltas, im_info, anchors


@pytest.mark.parametrize("pre,post", [(6000, 300), (30, 10), (0, 0)])
@pytest.mark.parametrize("correct,plus_one", [(False, True), (True, True), (False, False)])
def test_generate_proposals_matches_numpy(pre, post, correct, plus_one):
    rng = np.random.RandomState(pre + post + correct)
    scores, deltas, im_info, anchors = _case(rng, 2, 3, 5, 6)
    for op_type in ("GenerateProposals", "GenerateProposalsCPP"):
        op = h.make_op(op_type, ["s", "d", "i", "a"], ["r", "p"], spatial_scale=1.0 / 16,
                       pre_nms_topN=pre, post_nms_topN=post, nms_thresh=0.6, min_size=4.0,
                       correct_transform_coords=int(correct), legacy_plus_one=int(plus_one))
        rois, probs = h.run_op(op, [scores, deltas, im_info, anchors])
        want_rois, want_probs = ref.generate_proposals(scores, deltas, im_info, anchors, 16.0, pre, post,
                                           0.6, 4.0, correct, float(plus_one))
        np.testing.assert_allclose(rois, want_rois, rtol=1e-5, atol=1e-3)
        np.testing.assert_array_equal(probs, want_probs.astype(np.float32))


def _rotated_case(rng, n, A, H, W):
    sizes = rng.uniform(8, 64, (A, 2))
    angles = rng.choice([0.0, 0.5, 30.0, -60.0, 89.0], A)
    anchors = np.concatenate([np.full((A, 2), 7.5), sizes, angles[:, None]], axis=1)
    scores = rng.uniform(0, 1, (n, A, H, W)).astype(np.float32)
    deltas = (rng.randn(n, 5 * A, H, W) * 0.3).astype(np.float32)
    deltas[:, 4::5] *= 2.0  # turns of up to ~60 degrees, some past the +-90 fold
    im_info = np.array([[H * 16 - 5, W * 16 - 9, 1.0], [H * 12, W * 14, 0.75]][:n], np.float32)
    return scores, deltas, im_info, anchors.astype(np.float32)


@pytest.mark.parametrize("pre,post,plus_one", [(6000, 300, True), (25, 8, False)])
def test_rotated_proposals_match_numpy_and_shapely(pre, post, plus_one):
    rng = np.random.RandomState(pre + post)
    scores, deltas, im_info, anchors = _rotated_case(rng, 2, 4, 4, 5)
    op = h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"], spatial_scale=1.0 / 16,
                   pre_nms_topN=pre, post_nms_topN=post, nms_thresh=0.5, min_size=4.0,
                   legacy_plus_one=int(plus_one), clip_angle_thresh=1.0)
    rois, probs = h.run_op(op, [scores, deltas, im_info, anchors])
    want_rois, want_probs = ref.generate_proposals_rotated(
        scores, deltas, im_info, anchors, 16.0, pre, post, 0.5, 4.0, 1.0, float(plus_one))
    assert rois.shape[1] == 6 and len(rois) > 10
    assert np.abs(rois[:, 5]).max() <= 90 and np.abs(rois[:, 5]).max() > 30
    np.testing.assert_allclose(rois, want_rois, rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(probs, want_probs.astype(np.float32))


def test_rotated_proposals_errors():
    rng = np.random.RandomState(1)
    scores, deltas, im_info, anchors = _rotated_case(rng, 1, 2, 3, 3)
    op = h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"])
    h.assert_op_error(op, [scores, deltas[:, :8], im_info, anchors], "'d'", "N, 5 A, H, W")
    h.assert_op_error(h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"],
                                angle_bound_lo=-90, angle_bound_hi=45),
                      [scores, deltas, im_info, anchors], "multiple of 180")


def test_generate_proposals_nan_scores_sort_last():
    rng = np.random.RandomState(3)
    scores, deltas, im_info, anchors = _case(rng, 1, 2, 3, 3)
    scores[0, 0, 0, :] = np.nan
    op = h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"], min_size=0.0,
                   nms_thresh=1.0, post_nms_topN=0, pre_nms_topN=0)
    probs = h.run_op(op, [scores, deltas, im_info, anchors])[1]
    finite = probs[~np.isnan(probs)]
    assert np.isnan(probs[len(finite):]).all() and (np.diff(finite) <= 0).all()


def test_generate_proposals_bad_input():
    scores, deltas, im_info, anchors = _case(np.random.RandomState(2), 1, 2, 3, 3)
    op = h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"])
    h.assert_op_error(op, [scores, deltas[:, :7], im_info, anchors], "'d'", "N, 4 A, H, W")
    h.assert_op_error(op, [scores, deltas, im_info, anchors[:1]], "'a'", "[2, 4]")
    h.assert_op_error(op, [scores[0], deltas, im_info, anchors], "'s'", "[N, A, H, W]")
    bad = im_info.copy()
    bad[0, 2] = -1
    h.assert_op_error(op, [scores, deltas, bad, anchors], "im_info row 0")
    h.assert_op_error(h.make_op("GenerateProposals", ["s", "d", "i", "a"], ["r", "p"],
                                spatial_scale=0.0), [scores, deltas, im_info, anchors],
                      "spatial_scale")


if __name__ == "__main__":
    h.run_main(__file__)
