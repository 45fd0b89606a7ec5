"""RoIAlign and RoIAlignGradient against torchvision.ops.roi_align (the
port of Caffe2's kernel, in Debian's python3-torchvision) and its autograd,
finite differences, both orders, and the error paths."""
import numpy as np
import pytest

import op_harness as h

torch = pytest.importorskip("torch")
tv_ops = pytest.importorskip("torchvision.ops")


def _rois(rng, count, batch, height, width, scale, five=True):
    """Boxes in image coordinates (feature map / scale), some past the
    edges, some thinner than a pixel."""
    x1 = rng.uniform(-0.3 * width, width, count) / scale
    y1 = rng.uniform(-0.3 * height, height, count) / scale
    w = rng.choice([0.2, 1.5, 4.0, 0.5 * width], count) * rng.uniform(0.5, 1.5, count) / scale
    hh = rng.choice([0.3, 2.0, 5.0, 0.5 * height], count) * rng.uniform(0.5, 1.5, count) / scale
    boxes = np.stack([x1, y1, x1 + w, y1 + hh], axis=1)
    if not five:
        return boxes
    return np.concatenate([rng.randint(0, batch, (count, 1)), boxes], axis=1)


def _torchvision(x, rois, pooled, scale, sampling, aligned):
    if rois.shape[1] == 4:
        rois = np.concatenate([np.zeros((len(rois), 1)), rois], axis=1)
    y = tv_ops.roi_align(torch.from_numpy(x), torch.from_numpy(rois.astype(x.dtype)), pooled,
                         spatial_scale=scale, sampling_ratio=sampling, aligned=aligned)
    return y.numpy()


def _op(order="NCHW", pooled=(2, 3), scale=0.5, sampling=-1, aligned=False, grad=False):
    names = (["X", "R", "dY"], ["dX"]) if grad else (["X", "R"], ["Y"])
    return h.make_op("RoIAlignGradient" if grad else "RoIAlign", *names, pooled_h=pooled[0],
                     pooled_w=pooled[1], spatial_scale=scale, sampling_ratio=sampling,
                     aligned=int(aligned), order=order)


def _nhwc(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


CASES = [  # pooled, scale, sampling_ratio, aligned, five columns
    ((2, 3), 0.5, -1, False, True),
    ((7, 7), 0.25, 2, False, True),
    ((3, 2), 1.0, 0, True, True),
    ((1, 1), 0.125, 3, True, False),
    ((4, 5), 2.0, -1, True, True),
]


@pytest.mark.parametrize("pooled,scale,sampling,aligned,five", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_roi_align_matches_torchvision(pooled, scale, sampling, aligned, five, dtype):
    rng = np.random.RandomState(pooled[0] * 10 + pooled[1])
    batch = 2 if five else 1
    x = rng.randn(batch, 5, 9, 11).astype(dtype)
    rois = _rois(rng, 12, batch, 9, 11, scale, five).astype(dtype)
    want = _torchvision(x, rois, pooled, scale, sampling, aligned)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got = h.run_op(_op("NCHW", pooled, scale, sampling, aligned), [x, rois])[0]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    got = h.run_op(_op("NHWC", pooled, scale, sampling, aligned), [_nhwc(x), rois])[0]
    np.testing.assert_allclose(got, _nhwc(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("pooled,scale,sampling,aligned,five", CASES)
def test_roi_align_gradient_matches_torch_autograd(pooled, scale, sampling, aligned, five):
    rng = np.random.RandomState(7 + pooled[0])
    batch = 2 if five else 1
    x = rng.randn(batch, 4, 8, 10)
    rois = _rois(rng, 10, batch, 8, 10, scale, five)
    dy = rng.randn(len(rois), 4, *pooled)
    xt = torch.from_numpy(x).requires_grad_()
    full = rois if five else np.concatenate([np.zeros((len(rois), 1)), rois], axis=1)
    tv_ops.roi_align(xt, torch.from_numpy(full), pooled, spatial_scale=scale,
                     sampling_ratio=sampling, aligned=aligned).backward(torch.from_numpy(dy))
    want = xt.grad.numpy()
    got = h.run_op(_op("NCHW", pooled, scale, sampling, aligned, grad=True), [x, rois, dy])[0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got = h.run_op(_op("NHWC", pooled, scale, sampling, aligned, grad=True),
                   [_nhwc(x), rois, _nhwc(dy)])[0]
    np.testing.assert_allclose(got, _nhwc(want), rtol=1e-12, atol=1e-12)


def test_roi_align_finite_differences():
    rng = np.random.RandomState(3)
    x = rng.randn(1, 2, 6, 7)
    rois = np.array([[0, 1.3, 0.7, 9.1, 8.2], [0, -2.0, 3.1, 4.4, 13.0]])
    for order in ("NCHW", "NHWC"):
        op = _op(order, (2, 2), 0.5, 2)
        h.check_gradient(op, [x if order == "NCHW" else _nhwc(x), rois], [0])


def test_roi_align_gradient_maker():
    grad_ops, input_grads = h.gradient_ops(_op("NHWC", (3, 3), 0.25, 2, True))
    assert len(grad_ops) == 1
    g = grad_ops[0]
    assert g.type == "RoIAlignGradient"
    assert list(g.input) == ["X", "R", "Y_grad"] and list(g.output) == ["X_grad"]
    args = {a.name: a for a in g.arg}
    assert args["order"].s == b"NHWC" and args["pooled_h"].i == 3 and args["aligned"].i == 1
    assert input_grads == ["X_grad", None]


def test_roi_align_empty_rois():
    x = np.ones((2, 3, 4, 4), np.float32)
    rois = np.zeros((0, 5), np.float32)
    assert h.run_op(_op("NCHW", (2, 3)), [x, rois])[0].shape == (0, 3, 2, 3)
    assert h.run_op(_op("NHWC", (2, 3)), [_nhwc(x), rois])[0].shape == (0, 2, 3, 3)
    dx = h.run_op(_op(grad=True), [x, rois, np.zeros((0, 3, 2, 3), np.float32)])[0]
    np.testing.assert_array_equal(dx, np.zeros_like(x))


def test_roi_align_bad_input():
    x = np.ones((2, 3, 4, 4), np.float32)
    good = np.array([[1, 0, 0, 3, 3]], np.float32)
    for index in (2, -1, 0.5):
        rois = good.copy()
        rois[0, 0] = index
        h.assert_op_error(_op(), [x, rois], "RoI 0", "batch index", "2 images of X")
    for bad in (np.nan, np.inf):
        rois = good.copy()
        rois[0, 3] = bad
        h.assert_op_error(_op(), [x, rois], "RoI 0", "non-finite")
    overflow = np.array([[0, -3e38, 0, 3e38, 3]], np.float32)
    h.assert_op_error(_op(scale=100.0), [x, overflow], "RoI 0", "out of range")
    huge = np.array([[0, 0, 0, 3e9, 3e9]], np.float32)
    h.assert_op_error(_op(scale=1.0), [x, huge], "RoI 0", "sampling grid")
    h.assert_op_error(_op(), [x, good[:, :3]], "'R'", "[R, 5]")
    h.assert_op_error(_op(), [x, good.astype(np.float64)], "'R'", "float64")
    h.assert_op_error(_op(), [x[0], good], "'X'", "4-D")
    h.assert_op_error(_op(pooled=(0, 2)), [x, good], "pooled_h")
    h.assert_op_error(_op(scale=-1.0), [x, good], "spatial_scale")
    h.assert_op_error(_op(grad=True), [x, good, np.zeros((1, 3, 2, 2), np.float32)],
                      "'dY'", "[1, 3, 2, 3]")
    h.assert_op_error(_op(), [x.astype(np.int32), good.astype(np.int32)], "'X'", "int32")


if __name__ == "__main__":
    h.run_main(__file__)
