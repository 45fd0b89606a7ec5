// NCHW2NHWC and NHWC2NCHW: move the channel dim of an N-D image batch (rank
// >= 3) to the end or back to position 1. Each is the other's gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

class OrderSwitchOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
