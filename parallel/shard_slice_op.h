// ShardSlice: this shard's block of a tensor (parallel/shard_block.h), as a
// tensor of its own. The sharded optimizer state (ZeRO stage 1) keeps only
// its block of each optimizer state blob; the init net cuts them with this
// op, in place, and so does a restore after Load brought back the whole.
#pragma once

#include "core/operator.h"

namespace doppio {

class ShardSliceOp final : public Operator<CPUContext> {
 public:
  ShardSliceOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int num_shards_;
  int shard_id_;
};

}  // namespace doppio
