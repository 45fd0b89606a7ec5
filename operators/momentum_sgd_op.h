// Momentum SGD, as Caffe2's momentum_sgd_op. With learning rate lr (usually
// positive here: the update is subtracted) and momentum mu:
//   plain:    m' = lr * g + mu * m;                 step = m'
//   nesterov: m' = mu * m + lr * g;                 step = (1 + mu) * m' - mu * m
// and the ops return (step as the new gradient, m'[, param - step]).
//
//   MomentumSGD(grad, moment, lr) -> (grad, moment)
//   MomentumSGDUpdate(grad, moment, lr, param) -> (grad, moment, param)
//   SparseMomentumSGDUpdate(grad, moment, lr, param, indices)
//       -> (grad, moment, param): rows `indices` of moment and param only,
//          in place; grad holds one row per index.
#pragma once

#include "core/operator.h"

namespace doppio {

class MomentumSGDOp final : public Operator<CPUContext> {
 public:
  MomentumSGDOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float momentum_;
  bool nesterov_;
};

class MomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  MomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float momentum_;
  bool nesterov_;
};

class SparseMomentumSGDUpdateOp final : public Operator<CPUContext> {
 public:
  SparseMomentumSGDUpdateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float momentum_;
  bool nesterov_;
};

}  // namespace doppio
