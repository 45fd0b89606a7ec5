// Cross-process Allgather over a common world (engine "GLOO").
#pragma once

#include "core/operator.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

// Y = the concatenation along axis 0 of every rank's inputs, rank-major:
// rank 0's X_1..X_k, then rank 1's, ... Every input on every rank has one
// shape and type; Y has shape [size * k * d0, d1, ...] ([size * k] for
// scalars).
class GlooAllgatherOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  CachedAlgorithm cache_;
};

}  // namespace doppio
