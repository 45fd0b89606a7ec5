// Adam (https://arxiv.org/abs/1412.6980) as Caffe2's adam_op: given
// (param, moment_1, moment_2, grad, lr, iter), with t = iter + 1,
//   m1' = beta1 * m1 + (1 - beta1) * g
//   m2' = beta2 * m2 + (1 - beta2) * g^2
//   step = sqrt(1 - beta2^t) / (1 - beta1^t) * m1' / (sqrt(m2') + epsilon)
//   param' = param + lr * step        (lr negative for descent)
// and returns (param', m1', m2'[, step]).
#pragma once

#include "core/operator.h"
#include "operators/optimizer_utils.h"

namespace doppio {

class AdamOp final : public Operator<CPUContext> {
 public:
  AdamOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  AdamArgs args_;
};

}  // namespace doppio
