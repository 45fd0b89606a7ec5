// ScatterWeightedSum (Caffe2's, for sparse updates such as seq2seq's
// embeddings): X0[indices] = w0 * X0[indices] + sum_k w_k * X_k, in place.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs: X0 (float32 [N, ...], also the output), w0 ([1]), indices (int32
// or int64 [K] into X0's rows), then pairs X_k ([K, ...] rows), w_k ([1]).
// Every indexed row is scaled by w0 once per occurrence, then each X_k row
// is added with its weight, in index order (as Caffe2).
class ScatterWeightedSumOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
