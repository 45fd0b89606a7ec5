// Conditional (Caffe2's conditional_op): picks, row by row, from one of two
// tensors by a bool per row.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs: Condition (bool [N]), DataT and DataF (one shape and dtype,
// [N, ...]); output: row i of DataT where Condition[i], else of DataF.
class ConditionalOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
