// ChannelStats: per-channel sum and sum of squares of X. Summed over several
// batches (devices) they give SpatialBN (num_batches > 1) the statistics of
// the union of those batches -- what data_parallel_model's
// combine_spatial_bn feeds it.
#pragma once

#include "core/operator.h"

namespace doppio {

// Input X (rank >= 2, NCHW or NHWC per "order"); outputs sum, sumsq, each of
// C elements and X's dtype.
class ChannelStatsOp final : public Operator<CPUContext> {
 public:
  ChannelStatsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  bool channels_last_;
};

}  // namespace doppio
