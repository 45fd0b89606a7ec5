// Cross-process reductions over a common world (engine "GLOO"): Allreduce
// and ReduceScatter, summing float32 / float64 tensors in place.
#pragma once

#include <string>

#include "core/operator.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

// Allreduce under engine "GLOO": every tensor on every rank becomes the sum
// of all the tensors of all ranks. `algorithm`: "ring", "ring_chunked" or
// "halving_doubling"; unset picks halving_doubling for power-of-two worlds
// (log2(size) steps, bandwidth-optimal there) and ring_chunked otherwise
// (its pipelining pays off when halving/doubling would need extra steps).
class GlooAllreduceOp final : public Operator<CPUContext> {
 public:
  GlooAllreduceOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::string algorithm_;  // as given; "" = chosen per world size
  CachedAlgorithm cache_;
};

// ReduceScatter under engine "GLOO": sums like Allreduce, but rank r only
// receives block r of the sum, where the N elements are split into `size`
// consecutive blocks of N / size (the first N % size blocks one longer).
// As Gloo's halving/doubling leaves it, block r lands in the first n_r
// elements of every X on rank r; the rest of X is scratch.
class GlooReduceScatterOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  CachedAlgorithm cache_;
};

}  // namespace doppio
