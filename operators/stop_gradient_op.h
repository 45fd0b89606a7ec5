// StopGradient: the identity in the forward pass (in place, or a copy as
// Caffe2 makes), and a wall for the backward pass: its input gets no
// gradient. ZeroGradient: does nothing forward, and gives its input a zero
// gradient (for outputs no loss reaches that a gradient op still reads).
#pragma once

#include "core/operator.h"

namespace doppio {

class StopGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class ZeroGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override {}
};

}  // namespace doppio
