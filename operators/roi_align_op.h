// RoIAlign and RoIAlignGradient (Caffe2's, from Detectron's Mask R-CNN):
// each region of interest of a feature map is pooled into pooled_h x
// pooled_w bins, each bin the average of a grid of bilinearly interpolated
// samples (no quantization of the RoI or its bins).
//
//   X    [N, C, H, W]  (NHWC: [N, H, W, C]), float32 or float64
//   RoIs [R, 5] (batch index, x1, y1, x2, y2) or [R, 4] (one image), in
//        the input image's coordinates; spatial_scale maps them onto X
//   Y    [R, C, pooled_h, pooled_w]  (NHWC: [R, pooled_h, pooled_w, C])
//
// The sampling follows Caffe2 (and torchvision.ops.roi_align, its port):
// a sample outside [-1, H] x [-1, W] counts as 0, one inside is clamped to
// the image; aligned (later Caffe2's argument) shifts the RoI by half a
// pixel and lets it be thinner than one pixel.
//
// RoIAlignRotated / RoIAlignRotatedGradient (Caffe2's, for rotated region
// proposals): RoIs [R, 6] (batch index, ctr_x, ctr_y, w, h, angle in degrees
// counter-clockwise) or [R, 5]; the bins' grid is laid out in the RoI's own
// frame and turned by its angle about its center.
//
// Thread-safety: as any op, one Run at a time; channels are split across the
// intra-op threads, so the bits do not depend on the thread count.
#pragma once

#include "core/operator.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {

// The arguments both ops read.
struct RoIAlignArgs {
  StorageOrder order = StorageOrder::kNCHW;
  double spatial_scale = 1.0;
  int64_t pooled_h = 1;
  int64_t pooled_w = 1;
  int64_t sampling_ratio = -1;  // <= 0: adaptive, ceil(RoI side / pooled side)
  bool aligned = false;
  bool rotated = false;  // the RoIAlignRotated ops
};

class RoIAlignOp final : public Operator<CPUContext> {
 public:
  RoIAlignOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  RoIAlignArgs args_;
};

// Inputs X, RoIs, dY; output dX (X's shape): each sample's share of dY
// added back onto the four pixels it interpolated.
class RoIAlignGradientOp final : public Operator<CPUContext> {
 public:
  RoIAlignGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  RoIAlignArgs args_;
};

}  // namespace doppio
