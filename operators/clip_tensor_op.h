// ClipTensorByScaling(input_tensor, val[, additional_threshold]) -> clipped,
// as Caffe2's clip_tensor_op: gradient clipping by norm. `val` is usually the
// precomputed norm of the tensor (e.g. from LpNorm); when it exceeds the
// threshold (times additional_threshold, if given) the tensor is scaled by
// threshold / val, otherwise copied.
#pragma once

#include "core/operator.h"

namespace doppio {

class ClipTensorByScalingOp final : public Operator<CPUContext> {
 public:
  ClipTensorByScalingOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float threshold_;
};

}  // namespace doppio
