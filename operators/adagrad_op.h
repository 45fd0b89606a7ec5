// AdaGrad as Caffe2's adagrad_op:
//   Adagrad(param, moment, grad, lr) -> (param, moment[, effective_lr, update])
//     moment' = decay * moment + g^2
//     effective_lr = lr / (sqrt(moment') + epsilon);  update = effective_lr * g
//     param' = param + update                    (lr negative for descent)
//   SparseAdagrad(param, moment, indices, grad, lr) -> (param, moment): the
//     same (decay 1) on the rows `indices` only, in place.
#pragma once

#include "core/operator.h"
#include "operators/optimizer_utils.h"

namespace doppio {

class AdagradOp final : public Operator<CPUContext> {
 public:
  AdagradOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  AdagradArgs args_;
};

class SparseAdagradOp final : public Operator<CPUContext> {
 public:
  SparseAdagradOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  AdagradArgs args_;
};

}  // namespace doppio
