// WeightedSum: Y = sum_i w_i * X_i over inputs X_0, w_0, X_1, w_1, ... (the
// w_i one-element tensors), the SGD update's workhorse; and its gradient
// WeightedSumGradient (dX_i = w_i * dY, plus dw_i = <dY, X_i> with
// grad_on_w=1).
#pragma once

#include "core/operator.h"

namespace doppio {

class WeightedSumOp final : public Operator<CPUContext> {
 public:
  WeightedSumOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;
};

class WeightedSumGradientOp final : public Operator<CPUContext> {
 public:
  WeightedSumGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool grad_on_w_;
};

}  // namespace doppio
