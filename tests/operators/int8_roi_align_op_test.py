"""Int8RoIAlign against torchvision.ops.roi_align of the reals, quantized
once: equal but where the reference sits within float rounding of a step
boundary; empty RoIs; the errors."""
import numpy as np
import pytest
import torch
import torchvision

import op_harness as h


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
def test_int8_roi_align_matches_torchvision(sampling_ratio):
    rng = np.random.RandomState(7)
    x = rng.randint(0, 256, size=(2, 12, 10, 4)).astype(np.uint8)
    rois = np.array([[0, 1.0, 2.0, 8.5, 9.0], [1, 0.0, 0.0, 19.0, 23.0],
                     [1, 4.2, 3.3, 5.1, 4.0]], np.float32)
    op = h.make_op("Int8RoIAlign", ["X", "R"], ["Y"], spatial_scale=0.5, pooled_h=3,
                   pooled_w=4, sampling_ratio=sampling_ratio, Y_scale=0.06, Y_zero_point=20)
    data, scale, zero_point = h.run_op(op, [h.Int8(x, 0.05, 100), rois])[0]
    reals = (x.astype(np.float64) - 100) * np.float64(np.float32(0.05))
    ref = torchvision.ops.roi_align(torch.from_numpy(reals).permute(0, 3, 1, 2),
                                    torch.from_numpy(rois.astype(np.float64)), (3, 4),
                                    spatial_scale=0.5, sampling_ratio=sampling_ratio,
                                    aligned=False).permute(0, 2, 3, 1).numpy()
    want = np.clip(np.rint(ref / np.float64(np.float32(0.06))) + 20, 0, 255)
    assert data.shape == (3, 3, 4, 4) and (scale, zero_point) == (np.float32(0.06), 20)
    assert np.abs(data.astype(np.int64) - want).max() <= 1
    assert (data == want).mean() > 0.97


def test_int8_roi_align_empty_and_errors():
    x = h.Int8(np.zeros((1, 4, 4, 2), np.uint8), 1.0, 0)
    op = h.make_op("Int8RoIAlign", ["X", "R"], ["Y"], pooled_h=2, pooled_w=2)
    data = h.run_op(op, [x, np.zeros((0, 5), np.float32)])[0][0]
    assert data.shape == (0, 2, 2, 2)
    h.assert_op_error(op, [x, np.zeros((2, 3), np.float32)], "'R'")
    h.assert_op_error(op, [x, np.array([[3, 0, 0, 1, 1]], np.float32)], "batch index")
    nchw = h.make_op("Int8RoIAlign", ["X", "R"], ["Y"], order="NCHW")
    h.assert_op_error(nchw, [x, np.zeros((0, 5), np.float32)], "NHWC")


if __name__ == "__main__":
    h.run_main(__file__)
