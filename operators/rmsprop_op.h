// RMSProp as Caffe2's rmsprop_op: RmsProp(grad, mean_squares, mom, lr) ->
// (grad, mean_squares, mom) with
//   ms' = ms + (1 - decay) * (g^2 - ms)
//   mom' = momentum * mom + lr * g / sqrt(epsilon + ms')
//   grad' = mom'
// The parameter update itself is a separate op (e.g. WeightedSum / Sub).
#pragma once

#include "core/operator.h"

namespace doppio {

class RmsPropOp final : public Operator<CPUContext> {
 public:
  RmsPropOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float decay_;
  float momentum_;
  float epsilon_;
};

}  // namespace doppio
