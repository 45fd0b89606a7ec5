// ElementwiseLinear: Y = X * a + b with one scale and one shift per feature
// (Caffe2's op; rnn_cell's MILSTM builds its gates with it), and its
// gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs X (float32, viewed as [N, D] with N the product of the dims before
// `axis`, default 1), a [D], b [D]. Output Y, X's shape.
class ElementwiseLinearOp final : public Operator<CPUContext> {
 public:
  ElementwiseLinearOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

// Inputs dY, X, a; outputs dX, da, db.
class ElementwiseLinearGradientOp final : public Operator<CPUContext> {
 public:
  ElementwiseLinearGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

}  // namespace doppio
