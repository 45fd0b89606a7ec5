// MicroBatchSlice: micro-batch `step` of a fed batch, as a view of its rows.
// With accumulate_steps=K the Parallelize pass keeps each blob the training
// net reads but does not make (a batch fed from Python with FeedBlob) under
// a second name for the step, and every micro-step reads rows
// [step * N / K, (step + 1) * N / K) of it through this op, so K micro-steps
// see the fed batch once, in K parts (parallel/data_parallel_plan.h).
//
// Thread-safety: as any op, run by one thread at a time.
#pragma once

#include "core/operator.h"

namespace doppio {

class MicroBatchSliceOp final : public Operator<CPUContext> {
 public:
  MicroBatchSliceOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int64_t micro_batches_;
};

}  // namespace doppio
