// Row addressing by index tensors: Gather reads rows of DATA (BatchGather
// the rows of each batch entry), ScatterAssign overwrites them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

// Gather's `axis` argument, for the CPU and CUDA ops: later Caffe2
// versions added it; only the original axis 0 is implemented, so any other
// value is an error rather than a gather along the wrong axis.
void EnforceGatherAxis(const OperatorBase& op);

// Gather(DATA, INDICES) -> OUTPUT of shape INDICES.shape + DATA.shape[1:]:
// OUTPUT[i...] = DATA[INDICES[i...]]. DATA may hold any dtype; INDICES are
// int32 or int64, each in [0, DATA.shape[0]).
class GatherOp final : public Operator<CPUContext> {
 public:
  GatherOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool wrap_indices_;
  std::vector<int64_t> wrapped_;  // the indices, wrapped (wrap_indices)
};

// BatchGather(DATA, INDICES) -> OUTPUT of shape [DATA.shape[0]] +
// INDICES.shape + DATA.shape[2:]: Gather along axis 1, batch by batch.
// BatchGatherGradient(DATA, INDICES, dOUTPUT) -> dDATA (dense, DATA's
// shape): each output gradient row added back where it was read from.
class BatchGatherOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class BatchGatherGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// ScatterAssign(DATA, INDICES, SLICES) -> DATA, in place: row INDICES[k] of
// DATA becomes slice k of SLICES (K = INDICES.numel() slices of one row each).
// With repeated indices the last slice wins.
class ScatterAssignOp final : public Operator<CPUContext> {
 public:
  ScatterAssignOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;
};

}  // namespace doppio
