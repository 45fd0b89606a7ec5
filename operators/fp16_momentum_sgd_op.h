// Caffe2's momentum SGD with weight decay folded in, for float16 training:
//
//   FP16MomentumSGDUpdate(grad, moment, lr, param) -> (grad, moment, param)
//       float16 (or bfloat16) grad, moment and param; float32 lr
//   FP32MomentumSGDUpdate(grad, moment, lr, param) -> (grad, moment, param)
//       the same on float32 blobs
//
// With g' = g + weight_decay * param:
//   plain:    m' = lr * g' + mu * m;   step = m'
//   nesterov: m' = mu * m + lr * g';   step = (1 + mu) * m' - mu * m
// and param -= step (lr positive: the step is subtracted, as
// MomentumSGDUpdate). The CPU kernel computes each element in float32 and
// rounds the three results to the blobs' type once; Caffe2's GPU kernel does
// this with fp32_update=1 and rounds after every operation without it.
#pragma once

#include "core/operator.h"

namespace doppio {

class FP16MomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  FP16MomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float momentum_, weight_decay_;
  bool nesterov_;
};

class FP32MomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  FP32MomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float momentum_, weight_decay_;
  bool nesterov_;
};

}  // namespace doppio
