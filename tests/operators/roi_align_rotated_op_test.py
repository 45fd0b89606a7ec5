"""RoIAlignRotated and RoIAlignRotatedGradient (Caffe2's, for rotated region
proposals) against an independent numpy sampler written from the op's
definition (each bin's grid in the RoI's frame, turned counter-clockwise by
its angle about its center, bilinear reads clamped into the map), against
torchvision's roi_align at angle 0, finite differences, and errors."""
import numpy as np
import pytest

import op_harness as h


def _bilinear(plane, y, x):
    """Caffe2's read: 0 beyond one pixel outside, else clamped into the map."""
    height, width = plane.shape
    if y < -1 or y > height or x < -1 or x > width:
        return 0.0
    y, x = min(max(y, 0.0), height - 1.0), min(max(x, 0.0), width - 1.0)
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1] +
            ly * (1 - lx) * plane[y1, x0] + ly * lx * plane[y1, x1])


def _reference(x, rois, pooled, scale, sampling, aligned):
    ph_count, pw_count = pooled
    out = np.zeros((len(rois), x.shape[1], ph_count, pw_count))
    for r, roi in enumerate(rois):
        image, (cx, cy, w, hh, angle) = (int(roi[0]), roi[1:]) if len(roi) == 6 else (0, roi)
        offset = 0.5 if aligned else 0.0
        cx, cy, w, hh = cx * scale - offset, cy * scale - offset, w * scale, hh * scale
        if not aligned:
            w, hh = max(w, 1.0), max(hh, 1.0)
        theta = np.deg2rad(angle)
        bin_h, bin_w = hh / ph_count, w / pw_count
        grid_h = sampling if sampling > 0 else int(np.ceil(hh / ph_count))
        grid_w = sampling if sampling > 0 else int(np.ceil(w / pw_count))
        for c in range(x.shape[1]):
            for ph in range(ph_count):
                for pw in range(pw_count):
                    total = 0.0
                    for iy in range(grid_h):
                        for ix in range(grid_w):
                            yy = -hh / 2 + (ph + (iy + 0.5) / grid_h) * bin_h
                            xx = -w / 2 + (pw + (ix + 0.5) / grid_w) * bin_w
                            # the point (xx, yy) of the RoI's frame, turned by theta
                            px = xx * np.cos(theta) + yy * np.sin(theta) + cx
                            py = yy * np.cos(theta) - xx * np.sin(theta) + cy
                            total += _bilinear(x[image, c], py, px)
                    out[r, c, ph, pw] = total / max(grid_h * grid_w, 1)
    return out


def _rois(rng, count, batch, height, width, scale):
    ctr = rng.uniform(-2, [width / scale + 2, height / scale + 2], (count, 2))
    size = rng.choice([0.4, 3.0, 6.0], (count, 2)) / scale * rng.uniform(0.6, 1.4, (count, 2))
    angle = rng.choice([0.0, 30.0, -45.0, 90.0, 135.0, -170.0], (count, 1))
    return np.concatenate([rng.randint(0, batch, (count, 1)), ctr, size, angle], axis=1)


def _op(pooled=(2, 3), scale=0.5, sampling=-1, aligned=False, order="NCHW", grad=False):
    names = (["X", "R", "dY"], ["dX"]) if grad else (["X", "R"], ["Y"])
    return h.make_op("RoIAlignRotatedGradient" if grad else "RoIAlignRotated", *names,
                     pooled_h=pooled[0], pooled_w=pooled[1], spatial_scale=scale,
                     sampling_ratio=sampling, aligned=int(aligned), order=order)


@pytest.mark.parametrize("pooled,scale,sampling,aligned", [
    ((2, 3), 0.5, -1, False), ((3, 3), 1.0, 2, True), ((1, 2), 0.25, 0, False)])
def test_rotated_roi_align_matches_numpy(pooled, scale, sampling, aligned):
    rng = np.random.RandomState(pooled[0] + 7 * pooled[1])
    x = rng.randn(2, 3, 8, 10)
    rois = _rois(rng, 10, 2, 8, 10, scale)
    want = _reference(x, rois, pooled, scale, sampling, aligned)
    got = h.run_op(_op(pooled, scale, sampling, aligned), [x, rois])[0]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    nhwc = h.run_op(_op(pooled, scale, sampling, aligned, order="NHWC"),
                    [np.ascontiguousarray(np.moveaxis(x, 1, -1)), rois])[0]
    np.testing.assert_allclose(np.moveaxis(nhwc, -1, 1), want, rtol=1e-10, atol=1e-12)
    one_image = rois[rois[:, 0] == 0][:, 1:]
    got = h.run_op(_op(pooled, scale, sampling, aligned), [x[:1], one_image])[0]
    np.testing.assert_allclose(got, want[rois[:, 0] == 0], rtol=1e-10, atol=1e-12)


def test_upright_rotated_rois_are_torchvisions_roi_align():
    torch = pytest.importorskip("torch")
    tv_ops = pytest.importorskip("torchvision.ops")
    rng = np.random.RandomState(3)
    x = rng.randn(1, 4, 9, 11).astype(np.float32)
    rois = _rois(rng, 8, 1, 9, 11, 0.5)
    rois[:, 5] = 0.0
    corners = np.stack([rois[:, 0], rois[:, 1] - rois[:, 3] / 2, rois[:, 2] - rois[:, 4] / 2,
                        rois[:, 1] + rois[:, 3] / 2, rois[:, 2] + rois[:, 4] / 2], axis=1)
    want = tv_ops.roi_align(torch.from_numpy(x), torch.from_numpy(corners.astype(np.float32)),
                            (3, 2), spatial_scale=0.5, sampling_ratio=2, aligned=True).numpy()
    got = h.run_op(_op((3, 2), 0.5, 2, True), [x, rois.astype(np.float32)])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_rotated_roi_align_gradient():
    rng = np.random.RandomState(5)
    x = rng.randn(1, 2, 6, 7)
    rois = np.array([[0, 3.0, 3.0, 4.0, 3.0, 30.0], [0, 2.0, 4.5, 5.0, 2.0, -60.0]])
    h.check_gradient(_op((2, 2), 1.0, 2), [x, rois], [0])
    ops, _ = h.gradient_ops(_op((2, 2), 1.0, 2))
    assert ops[0].type == "RoIAlignRotatedGradient"


def test_rotated_roi_align_errors():
    x = np.zeros((1, 2, 4, 4), np.float32)
    h.assert_op_error(_op(), [x, np.zeros((2, 5 - 1), np.float32)], "'R'", "[R, 6]")
    h.assert_op_error(_op(), [x, np.array([[0, 1, 1, 2, 2, np.nan]], np.float32)],
                      "RoI 0", "non-finite")
    h.assert_op_error(_op(aligned=True), [x, np.array([[0, 1, 1, -2, 2, 0]], np.float32)],
                      "RoI 0", "negative size")
    h.assert_op_error(_op(), [x, np.array([[3, 1, 1, 2, 2, 0]], np.float32)], "RoI 0",
                      "batch index")
    empty = h.run_op(_op(), [x, np.zeros((0, 6), np.float32)])[0]
    assert empty.shape == (0, 2, 2, 3)


if __name__ == "__main__":
    h.run_main(__file__)
