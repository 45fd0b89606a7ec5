// ResizeNearest and ResizeNearestGradient (Caffe2's; Detectron's FPN and
// Mask R-CNN2Go upsample with them): nearest-neighbour resizing of the two
// spatial dims of an NCHW or NHWC tensor by height_scale and width_scale.
//
//   X      [N, C, H, W]  (NHWC: [N, H, W, C]), float32 or float64
//   scales optional second input, float32 [2]: (height_scale, width_scale),
//          overriding the arguments (later Caffe2's form)
//   Y      [N, C, int(H * height_scale), int(W * width_scale)]
//
// Y[y, x] = X[min(int(y / height_scale), H - 1), min(int(x / width_scale),
// W - 1)], the quotients in float32 as Caffe2 computes them.
//
// Thread-safety: as any op; rows of images are split across the intra-op
// threads, each output written once.
#pragma once

#include "core/operator.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {

class ResizeNearestOp final : public Operator<CPUContext> {
 public:
  ResizeNearestOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  StorageOrder order_;
  float height_scale_, width_scale_;
};

// Inputs dY, X (and scales when the forward had them); output dX, X's
// shape: each dX pixel sums the dY pixels that copied it.
class ResizeNearestGradientOp final : public Operator<CPUContext> {
 public:
  ResizeNearestGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  StorageOrder order_;
  float height_scale_, width_scale_;
};

// UpsampleNearest and UpsampleNearestGradient (Detectron's, FPN's top-down
// path): ResizeNearest of an NCHW tensor by an integer `scale` (default 2)
// on both sides; the gradient takes (X, dY).
class UpsampleNearestOp final : public Operator<CPUContext> {
 public:
  UpsampleNearestOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int64_t scale_;
};

class UpsampleNearestGradientOp final : public Operator<CPUContext> {
 public:
  UpsampleNearestGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int64_t scale_;
};

}  // namespace doppio
