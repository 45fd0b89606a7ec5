"""RoIPool and RoIPoolGradient against torchvision.ops.roi_pool (Fast
R-CNN's algorithm) and its autograd, argmaxes, empty bins, and the error
paths."""
import numpy as np
import pytest

import op_harness as h

torch = pytest.importorskip("torch")
tv_ops = pytest.importorskip("torchvision.ops")


def _case(rng, rois=9):
    x = rng.randn(2, 3, 7, 9).astype(np.float32)
    xy = rng.uniform(-20, 140, (rois, 2))
    wh = rng.uniform(0, 90, (rois, 2))
    boxes = np.concatenate([rng.randint(0, 2, (rois, 1)), xy, xy + wh], axis=1)
    return x, boxes.astype(np.float32)


@pytest.mark.parametrize("pooled,scale", [((2, 2), 1 / 16), ((3, 4), 0.0625), ((1, 1), 0.1)])
def test_roi_pool_matches_torchvision(pooled, scale):
    rng = np.random.RandomState(pooled[0] * 7 + pooled[1])
    x, rois = _case(rng)
    op = h.make_op("RoIPool", ["X", "R"], ["Y", "A"], pooled_h=pooled[0], pooled_w=pooled[1],
                   spatial_scale=scale)
    y, argmax = h.run_op(op, [x, rois])
    xt = torch.from_numpy(x).requires_grad_()
    want = tv_ops.roi_pool(xt, torch.from_numpy(rois), pooled, spatial_scale=scale)
    np.testing.assert_array_equal(y, want.detach().numpy())
    planes = x.reshape(2, 3, -1)
    for r in range(len(rois)):
        for c in range(3):
            a = argmax[r, c].ravel()
            got = np.where(a >= 0, planes[int(rois[r, 0]), c][np.maximum(a, 0)], 0)
            np.testing.assert_array_equal(got, y[r, c].ravel())
    test = h.make_op("RoIPool", ["X", "R"], ["Y"], pooled_h=pooled[0], pooled_w=pooled[1],
                     spatial_scale=scale, is_test=1)
    np.testing.assert_array_equal(h.run_op(test, [x, rois])[0], y)
    dy = rng.randn(*y.shape).astype(np.float32)
    want.backward(torch.from_numpy(dy))
    grad = h.make_op("RoIPoolGradient", ["X", "R", "A", "dY"], ["dX"], pooled_h=pooled[0],
                     pooled_w=pooled[1], spatial_scale=scale)
    np.testing.assert_allclose(h.run_op(grad, [x, rois, argmax, dy])[0], xt.grad.numpy(),
                               rtol=1e-6, atol=1e-6)


def test_roi_pool_gradient_maker():
    op = h.make_op("RoIPool", ["X", "R"], ["Y", "A"], pooled_h=2)
    grad_ops, input_grads = h.gradient_ops(op)
    assert grad_ops[0].type == "RoIPoolGradient"
    assert list(grad_ops[0].input) == ["X", "R", "A", "Y_grad"]
    assert input_grads == ["X_grad", None]


def test_roi_pool_bad_input():
    x, rois = _case(np.random.RandomState(1), 2)
    op = h.make_op("RoIPool", ["X", "R"], ["Y", "A"])
    bad = rois.copy()
    bad[1, 0] = 2
    h.assert_op_error(op, [x, bad], "RoI 1", "batch index 2")
    bad = rois.copy()
    bad[0, 2] = np.inf
    h.assert_op_error(op, [x, bad], "RoI 0", "out of range")
    h.assert_op_error(op, [x, rois[:, 1:]], "'R'", "[R, 5]")
    h.assert_op_error(h.make_op("RoIPool", ["X", "R"], ["Y"]), [x, rois], "2 outputs")
    h.assert_op_error(h.make_op("RoIPool", ["X", "R"], ["Y", "A"], order="NHWC"), [x, rois],
                      "NCHW only")
    grad = h.make_op("RoIPoolGradient", ["X", "R", "A", "dY"], ["dX"])
    dy = np.ones((2, 3, 1, 1), np.float32)
    h.assert_op_error(grad, [x, rois, np.full((2, 3, 1, 1), 63, np.int32), dy], "argmaxes[0]")
    h.assert_op_error(grad, [x, rois, np.zeros((2, 3, 1, 1), np.int64), dy], "'A'", "int32")


if __name__ == "__main__":
    h.run_main(__file__)
