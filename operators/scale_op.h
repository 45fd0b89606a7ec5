// Scale: Y = scale * X.
#pragma once

#include "core/operator.h"

namespace doppio {

// The `scale` argument (default 1), for the CPU and CUDA ops.
float ReadScaleArgument(const OperatorBase& op);

// Input X (float32 or float64); output Y, which may be X.
class ScaleOp final : public Operator<CPUContext> {
 public:
  ScaleOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float scale_;
};

}  // namespace doppio
