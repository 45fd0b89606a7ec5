// ReversePackedSegs (Caffe2's reverse_packed_segs_op): reverses each
// sequence of a padded [T, N, D] batch within its own length (the backward
// direction of a bidirectional RNN); its own gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs: data [T, N, D], lengths [N] (int32 or int64, each <= T); output:
// data with steps 0..lengths[n]-1 of sequence n reversed, padding kept.
class ReversePackedSegsOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
