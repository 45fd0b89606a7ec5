// Sum: the elementwise sum of any number of same-shaped inputs.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs data_0 ... data_{n-1} (one shape and dtype: float, double, int32
// or int64); output sum. Input 0 may be the output (accumulation in place).
class SumOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
