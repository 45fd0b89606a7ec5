// Resize: ONNX's Resize (opset 11-18 semantics) over tensors of any rank,
// each axis resized on its own (the interpolation is separable), inner axes
// first as ONNX's reference does:
//   mode                             nearest | linear | cubic
//   coordinate_transformation_mode   half_pixel (default) | pytorch_half_pixel
//                                    | align_corners | asymmetric
//                                    | tf_half_pixel_for_nn | tf_crop_and_resize
//   nearest_mode                     round_prefer_floor (default) |
//                                    round_prefer_ceil | floor | ceil
//   cubic_coeff_a (-0.75), exclude_outside (0), extrapolation_value (0)
//   sizes   the output dims (required, one per input dim)
//   scales  per-axis scale for the coordinate transform (default sizes / dims)
//   roi     [starts..., ends...] in normalized coordinates, tf_crop_and_resize
// Linear and cubic read samples beyond the edges as the edge value (unless
// exclude_outside, which drops them and renormalizes); tf_crop_and_resize
// writes extrapolation_value where a coordinate falls outside the input.
// float32 and float64, accumulated in double. No gradient: imported models
// are run for inference (the nearest, integer-factor case has Caffe2's
// ResizeNearest, which has one).
//
// Thread-safety: one Run at a time per op.
#pragma once

#include <string>
#include <vector>

#include "core/operator.h"

namespace doppio {

struct ResizeNdArgs {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<int64_t> sizes;
  std::vector<float> scales;
  std::vector<float> roi;
};

class ResizeNdOp final : public Operator<CPUContext> {
 public:
  ResizeNdOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  ResizeNdArgs args_;
};

}  // namespace doppio
