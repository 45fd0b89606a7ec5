// Segment sums keyed by a segment id per row, as Caffe2's
// segment_reduction_op: UnsortedSegmentSum(DATA, SEGMENT_IDS) adds each row
// of DATA into output row SEGMENT_IDS[i]; its gradient,
// UnsortedSegmentSumGradient(dOUTPUT, SEGMENT_IDS), gathers dOUTPUT's rows
// back.
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

class UnsortedSegmentSumOp final : public Operator<CPUContext> {
 public:
  UnsortedSegmentSumOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // -1: one past the largest segment id.
  int64_t num_segments_;
};

class UnsortedSegmentSumGradientOp final : public Operator<CPUContext> {
 public:
  UnsortedSegmentSumGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;
};

}  // namespace doppio
