// Host-side checks of CUDA index tensors for the ops that address rows
// through them (Gather, SparseMomentumSGDUpdate, SparseAdagrad on CUDA).
// For the .cc ops only (needs the CUDA context).
//
// The CPU ops reject an out-of-range index with an error naming it before
// writing anything (sparse_index_utils.h); the CUDA ops keep that contract
// by copying the indices to the host and checking them there. That costs a
// wait for the op's stream, once per run: indices are a batch's worth of
// ids, small next to the rows they address, and a stray write into a
// parameter table is worse than the stall.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

// Throws unless input `indices_input` of `op` is a tensor on the op's GPU
// whose values all lie in [0, bound).
template <typename Index>
void CheckCudaIndicesInRange(const OperatorBase& op, CUDAContext& context, int indices_input,
                             const Tensor& indices, int64_t bound, int bound_input) {
  EnforceInputOnDevice(op, indices_input, indices, context.device());
  const int64_t count = indices.numel();
  if (count == 0) return;
  std::vector<Index> host(static_cast<size_t>(count));
  context.CopyBytes(count * sizeof(Index), indices.data<Index>(), host.data());
  context.FinishDeviceComputation();
  CheckIndicesInRange(op, indices_input, host.data(), count, bound, bound_input);
}

}  // namespace doppio
