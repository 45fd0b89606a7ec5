// Adam (https://arxiv.org/abs/1412.6980) as Caffe2's adam_op: given
// (param, moment_1, moment_2, grad, lr, iter), with t = iter + 1,
//   m1' = beta1 * m1 + (1 - beta1) * g
//   m2' = beta2 * m2 + (1 - beta2) * g^2
//   step = sqrt(1 - beta2^t) / (1 - beta1^t) * m1' / (sqrt(m2') + epsilon)
//   param' = param + lr * step        (lr negative for descent)
// and returns (param', m1', m2'[, step]).
//
// SparseAdam(param, m1, m2, indices, grad, lr, iter) -> (param, m1, m2), in
// place: the same on the rows `indices` of param only, grad holding one row
// per index. RowWiseSparseAdam keeps one m2 per row of param, updated with
// the row's mean g^2.
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

// SparseAdam, and RowWiseSparseAdam when the op has that type.
class SparseAdamOp final : public Operator<CPUContext> {
 public:
  SparseAdamOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  void CheckInputs() const;
  // Updates row `row` of w, m1 and m2 from gradient row g.
  template <typename T>
  void UpdateRow(int64_t row, int64_t row_size, const T* g, double lr, double correction, T* w,
                 T* m1, T* m2) const;

  AdamArgs args_;
  bool row_wise_ = false;
};

}  // namespace doppio
