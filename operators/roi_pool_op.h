// RoIPool and RoIPoolGradient (Caffe2's, Fast R-CNN's): each region of
// interest is split into pooled_h x pooled_w bins on the feature map's
// pixel grid (the RoI's corners rounded to pixels) and each bin takes its
// maximum; an empty bin gives 0.
//
//   X        [N, C, H, W] float32 (NCHW, as Caffe2)
//   RoIs     [R, 5] (batch index, x1, y1, x2, y2) in the image's coordinates
//   Y        [R, C, pooled_h, pooled_w]
//   argmaxes [R, C, pooled_h, pooled_w] int32 (unless is_test): each bin's
//            maximum as h * W + w within its plane, -1 for an empty bin
//
// Thread-safety: as any op; the forward splits RoIs and the gradient
// channels across the intra-op threads (each dX value sums in RoI order).
#pragma once

#include "core/operator.h"

namespace doppio {

class RoIPoolOp final : public Operator<CPUContext> {
 public:
  RoIPoolOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool is_test_;
  float spatial_scale_;
  int64_t pooled_h_, pooled_w_;
};

// Inputs X, RoIs, argmaxes, dY; output dX: each bin's dY added at its
// maximum.
class RoIPoolGradientOp final : public Operator<CPUContext> {
 public:
  RoIPoolGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int64_t pooled_h_, pooled_w_;
};

}  // namespace doppio
