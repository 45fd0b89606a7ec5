// Chunk: torch.chunk / torch.nn.parallel.scatter's split rule as an op.
//
// Why a new op and not Caffe2's names: Doppio already registers Caffe2's
// `Gather` (index gather) and Caffe2 has ScatterAssign / ScatterWeightedSum,
// so "Scatter"/"Gather" would mean something else to a Caffe2 user. Gather
// along the batch is exactly Caffe2's `Concat` (whose split_info output makes
// its gradient a Split with the runtime sizes), and replicate is one `Copy`
// per device, so only the split needs a new op: Caffe2's `Split` needs its
// sizes up front (or equal parts), while torch.chunk's sizes depend on the
// batch size seen at run time. python_api/doppio/parallel_primitives.py
// builds scatter / gather / replicate / parallel_apply from these ops.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

// The sizes torch.chunk(n) gives a dimension of `size`: ceil(size / n) each,
// the last non-empty part smaller; where fewer than n parts come out of that
// rule (e.g. 5 into 4: 2, 2, 1) the remaining outputs are empty, since a net
// has a fixed number of outputs. Exposed for the op's tests and Python.
std::vector<int64_t> ChunkSizes(int64_t size, int parts);

// How Chunk splits X into `parts` outputs along `axis`: `before` rows, each
// holding sizes[i] * after contiguous elements of output i, in order.
// Checked here for the CPU and CUDA ops: X has the axis (negative counts
// from the end) and at least one element per output along it.
struct ChunkLayout {
  int axis = 0;
  int64_t before = 1;
  int64_t after = 1;
  std::vector<int64_t> sizes;
};
ChunkLayout PlanChunk(const OperatorBase& op, const Tensor& X, int axis, int parts);

// Chunk's `axis` argument (default 0), for the CPU and CUDA ops.
int ReadChunkAxis(const OperatorBase& op);

class ChunkOp final : public Operator<CPUContext> {
 public:
  ChunkOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

}  // namespace doppio
