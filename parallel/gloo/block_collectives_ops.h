// The collectives of the sharded optimizer state (ZeRO stage 1,
// ParallelizeOptions::shard_optimizer_state), engine "GLOO": every tensor
// is cut into one block per rank (parallel/shard_block.h), and many tensors
// travel in one collective, packed rank-major (rank 0's block of each
// tensor, then rank 1's, ...), so one bucket costs one round of messages.
//
//   ReduceScatterBlocks(world, X_1..X_m) -> (Y_1..Y_m)
//     Y_i = this rank's block of the sum over ranks of X_i, 1-D.
//   AllgatherBlocks(world, Y_1..Y_m, X_1..X_m) -> (X_1..X_m)
//     in place on X_i (its shape kept): every rank's block Y_i, each at its
//     place in the flattened X_i.
//
// Not thread-safe per op (one scratch buffer each), as every Gloo op here:
// the ops of one common world run one at a time.
#pragma once

#include <vector>

#include "core/operator.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

class GlooReduceScatterBlocksOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  // The packed tensors; Gloo's algorithm keeps pointing at it, so it is
  // reallocated only when the total size changes.
  std::vector<char> scratch_;
  CachedAlgorithm cache_;
};

class GlooAllgatherBlocksOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;

 private:
  // This rank's blocks, and every rank's (each padded to rank 0's length).
  std::vector<char> mine_;
  std::vector<char> scratch_;
  CachedAlgorithm cache_;
};

}  // namespace doppio
