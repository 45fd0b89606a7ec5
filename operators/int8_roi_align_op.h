// Int8RoIAlign (Caffe2's, for quantized Mask R-CNN2Go): RoIAlign of a
// uint8 NHWC feature map, RoIs in float32 [R, 5] or [R, 4], output Int8
// [R, pooled_h, pooled_w, C] in Y_scale / Y_zero_point. The bilinear samples
// are taken of the reals in float32 (RoIAlign itself, int8_twin_op.h) and
// rounded once; Caffe2's kernel rounds its interpolation weights to 1/255
// first, so its results differ from these by up to about one step.
//
// Thread-safety: one Run at a time per op.
#pragma once

#include "core/context.h"
#include "core/operator.h"
#include "operators/int8_twin_op.h"
#include "operators/int8_utils.h"

namespace doppio {

class Int8RoIAlignOp final : public Operator<CPUContext> {
 public:
  Int8RoIAlignOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
  TwinOp twin_;
};

}  // namespace doppio
