// Distances between rows of two tensors (Caffe2's distance ops):
// DotProduct and its gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs X, Y (float32, the same shape: [N] or [N, D...]); output Z [N], the
// dot product of each row pair (for 1-D inputs, X * Y).
class DotProductOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X, Y, dZ; outputs dX = dZ * Y and dY = dZ * X, row by row.
class DotProductGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
