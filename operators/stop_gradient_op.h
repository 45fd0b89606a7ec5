// StopGradient: the identity in the forward pass (in place, or a copy as
// Caffe2 makes), and a wall for the backward pass: its input gets no
// gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

class StopGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
