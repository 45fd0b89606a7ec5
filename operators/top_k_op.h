// TopK (Caffe2's top_k): the k largest entries along an axis, sorted, with
// their indices, and the gradient that scatters back into them.
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

// Input X; outputs Values and Indices (int64: positions along `axis`, dim
// `axis` k long), and optionally the flat positions in X. Ties keep the
// lower index first; NaN counts as the largest value. Arguments: k (>= 1,
// at most X's dim), axis (default -1).
class TopKOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs dValues, Indices, X (for the shape); output dX: zeros, with
// dValues at the chosen positions.
class TopKGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
