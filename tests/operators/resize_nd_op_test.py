"""Resize (ONNX's) against torch.nn.functional.interpolate: bilinear with
and without align_corners, bicubic, nearest with a non-integer factor, in
float32 and float64; a 3-D tensor; and the errors. ONNX's own node tests
(tests/onnx/onnx_backend_test.py) check the remaining modes."""
import numpy as np
import pytest
import torch

import op_harness as h


def _torch(x, size, mode, align_corners):
    kwargs = {} if mode == "nearest" else {"align_corners": align_corners}
    return torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode=mode,
                                           **kwargs).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode,transform,torch_mode,align", [
    ("linear", "pytorch_half_pixel", "bilinear", False),
    ("linear", "align_corners", "bilinear", True),
    ("cubic", "pytorch_half_pixel", "bicubic", False),
    ("cubic", "align_corners", "bicubic", True),
    ("nearest", "asymmetric", "nearest", None),
])
@pytest.mark.parametrize("size", [(7, 11), (3, 2)])
def test_resize_matches_torch(dtype, mode, transform, torch_mode, align, size):
    x = np.random.RandomState(0).randn(2, 3, 5, 6).astype(dtype)
    op = h.make_op("Resize", ["X"], ["Y"], sizes=[2, 3] + list(size), mode=mode,
                   coordinate_transformation_mode=transform, nearest_mode="floor")
    got = h.run_op(op, [x])[0]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, _torch(x, size, torch_mode, align), rtol=tol, atol=tol)


def test_resize_three_d_and_identity_axes():
    x = np.random.RandomState(1).randn(1, 2, 4, 5, 6).astype(np.float32)
    op = h.make_op("Resize", ["X"], ["Y"], sizes=[1, 2, 8, 5, 3], mode="linear",
                   coordinate_transformation_mode="pytorch_half_pixel")
    got = h.run_op(op, [x])[0]
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=(8, 5, 3),
                                           mode="trilinear", align_corners=False).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("args,fragment", [
    (dict(sizes=[2, 2], mode="area"), "mode 'area'"),
    (dict(sizes=[2, 2], coordinate_transformation_mode="corners"), "'corners'"),
    (dict(sizes=[2, 2, 2]), "one dim per dim of X 'X'"),
    (dict(sizes=[2, -1]), "negative"),
    (dict(sizes=[2, 2], scales=[1.0, 0.0]), "must be positive"),
])
def test_resize_errors(args, fragment):
    h.assert_op_error(h.make_op("Resize", ["X"], ["Y"], **args),
                      [np.ones((2, 2), np.float32)], fragment)


if __name__ == "__main__":
    h.run_main(__file__)
