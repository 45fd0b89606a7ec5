"""CollectRpnProposals, DistributeFpnProposals and
CollectAndDistributeFpnRpnProposals against numpy versions of Detectron's
Python ops, and the error paths."""
import numpy as np
import pytest

import op_harness as h


def _levels(rng, counts):
    rois, scores = [], []
    for n in counts:
        xy = rng.uniform(0, 600, (n, 2))
        wh = np.exp(rng.uniform(np.log(4), np.log(700), (n, 2)))
        rois.append(np.concatenate([rng.randint(0, 2, (n, 1)), xy, xy + wh],
                                   axis=1).astype(np.float32))
        scores.append(rng.uniform(0, 1, n).astype(np.float32))
    scores[0][:2] = scores[1][:2] = 0.5  # ties across levels keep input order
    return rois, scores


def _collect(rois, scores, top_n):
    all_rois, all_scores = np.concatenate(rois), np.concatenate(scores)
    order = np.argsort(-all_scores, kind="stable")
    return all_rois[order[:top_n] if top_n > 0 else order]


def _distribute(rois, lmin, lmax, plus_one):
    w = rois[:, 3] - rois[:, 1] + np.float32(plus_one)
    hh = rois[:, 4] - rois[:, 2] + np.float32(plus_one)
    s = np.sqrt(w * hh)
    lv = np.clip(np.floor(np.float32(4) + np.log2(s / np.float32(224) + np.float32(1e-6))),
                 lmin, lmax)
    outs, order = [], []
    for lvl in range(lmin, lmax + 1):
        idx = np.where(lv == lvl)[0]
        outs.append(rois[idx])
        order.extend(idx)
    return outs, np.argsort(np.array(order, np.int64), kind="stable").astype(np.int32)


@pytest.mark.parametrize("top_n,plus_one", [(2000, True), (25, True), (0, False)])
def test_collect_and_distribute_match_numpy(top_n, plus_one):
    rng = np.random.RandomState(top_n)
    rois, scores = _levels(rng, [20, 12, 0, 9, 6])
    names = ["r%d" % i for i in range(2, 7)] + ["s%d" % i for i in range(2, 7)]
    level_names = ["f%d" % i for i in range(2, 6)]
    args = dict(rpn_post_nms_topN=top_n, legacy_plus_one=int(plus_one))
    want = _collect(rois, scores, top_n)
    want_levels, want_restore = _distribute(want, 2, 5, plus_one)
    got = h.run_op(h.make_op("CollectRpnProposals", names, ["rois"], **args), rois + scores)[0]
    np.testing.assert_array_equal(got, want)
    both = h.make_op("CollectAndDistributeFpnRpnProposals", names,
                     ["rois"] + level_names + ["restore"], **args)
    out = h.run_op(both, rois + scores)
    np.testing.assert_array_equal(out[0], want)
    for got_level, want_level in zip(out[1:-1], want_levels):
        np.testing.assert_array_equal(got_level, want_level)
    np.testing.assert_array_equal(out[-1], want_restore)
    np.testing.assert_array_equal(np.concatenate(out[1:-1])[out[-1]], want)
    dist = h.make_op("DistributeFpnProposals", ["rois"], level_names + ["restore"],
                     legacy_plus_one=int(plus_one))
    out = h.run_op(dist, [want])
    for got_level, want_level in zip(out[:-1], want_levels):
        np.testing.assert_array_equal(got_level, want_level)
    np.testing.assert_array_equal(out[-1], want_restore)
    four = h.run_op(dist, [np.ascontiguousarray(want[:, 1:])])
    np.testing.assert_array_equal(four[-1], want_restore)


def test_old_post_nms_topn_name():
    rng = np.random.RandomState(3)
    rois, scores = _levels(rng, [5, 5, 5, 5, 5])
    names = ["r%d" % i for i in range(2, 7)] + ["s%d" % i for i in range(2, 7)]
    op = h.make_op("CollectRpnProposals", names, ["rois"], post_nms_topN=7)
    assert h.run_op(op, rois + scores)[0].shape == (7, 5)


def test_fpn_proposals_bad_input():
    rng = np.random.RandomState(4)
    rois, scores = _levels(rng, [3, 3, 3, 3, 3])
    names = ["r%d" % i for i in range(2, 7)] + ["s%d" % i for i in range(2, 7)]
    op = h.make_op("CollectRpnProposals", names[:-1], ["rois"])
    h.assert_op_error(op, rois + scores[:-1], "take 10 inputs")
    op = h.make_op("CollectRpnProposals", names, ["rois"])
    h.assert_op_error(op, rois + scores[:-1] + [scores[-1][:2]], "'s6'", "3 float32 scores")
    h.assert_op_error(op, [rois[0][:, :4]] + rois[1:] + scores, "'r2'", "[n, 5]")
    dist = h.make_op("DistributeFpnProposals", ["rois"], ["a", "b"])
    h.assert_op_error(dist, [rois[0]], "give 5 outputs")
    dist = h.make_op("DistributeFpnProposals", ["rois"], ["a", "b", "c", "d", "e"])
    bad = rois[0].copy()
    bad[1, 3] = bad[1, 1] - 50
    h.assert_op_error(dist, [bad], "RoI 1", "negative area")


if __name__ == "__main__":
    h.run_main(__file__)
