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
#include "operators/optimizer_utils.h"

namespace doppio {

// The arguments every momentum op reads (momentum, default 0; nesterov,
// default 0) and the dense step MomentumSGD and MomentumSGDUpdate share.
class MomentumSGDOpBase : public Operator<CPUContext> {
 public:
  MomentumSGDOpBase(const OperatorDef& def, Workspace* workspace);

 protected:
  // Outputs 0 and 1 get the step and the new moment of inputs 0 (grad) and
  // 1 (moment); `param`, when not null, takes the step.
  template <typename T>
  void DenseStep(const Tensor& grad, const Tensor& moment, double lr, T* param);

  MomentumSGDArgs args_;
};

class MomentumSGDOp final : public MomentumSGDOpBase {
 public:
  using MomentumSGDOpBase::MomentumSGDOpBase;
  void RunOnDevice() override;
};

class MomentumSGDUpdateOp final : public MomentumSGDOpBase {
 public:
  using MomentumSGDOpBase::MomentumSGDOpBase;
  void RunOnDevice() override;
};

class SparseMomentumSGDUpdateOp final : public MomentumSGDOpBase {
 public:
  using MomentumSGDOpBase::MomentumSGDOpBase;
  void RunOnDevice() override;
};

}  // namespace doppio
