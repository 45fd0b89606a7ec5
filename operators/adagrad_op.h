// AdaGrad as Caffe2's adagrad_op:
//   Adagrad(param, moment, grad, lr) -> (param, moment[, effective_lr, update])
//     moment' = decay * moment + g^2
//     effective_lr = lr / (sqrt(moment') + epsilon);  update = effective_lr * g
//     param' = param + update                    (lr negative for descent)
//   SparseAdagrad(param, moment, indices, grad, lr) -> (param, moment): the
//     same (decay 1) on the rows `indices` only, in place.
//   RowWiseSparseAdagrad: the same inputs, with one moment per row of param
//     that accumulates the row's mean g^2; the whole row steps by
//     lr / (sqrt(moment') + epsilon).
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

// SparseAdagrad, and RowWiseSparseAdagrad when the op has that type.
class SparseAdagradOp final : public Operator<CPUContext> {
 public:
  SparseAdagradOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Updates row `row` of w and its moment(s) h from gradient row g.
  template <typename T>
  void UpdateRow(int64_t row, int64_t row_size, const T* g, double lr, T* w, T* h) const;

  AdagradArgs args_;
  bool row_wise_ = false;
};

}  // namespace doppio
