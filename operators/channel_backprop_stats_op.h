// ChannelBackpropStats: SpatialBN's per-channel scale and bias gradients
// from one batch. Summed over several batches (devices) they are fed to
// SpatialBNGradient (num_batches > 1), so the input gradient accounts for
// statistics shared across those batches (combine_spatial_bn).
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs X, mean, inv_std, output_grad (SpatialBN's saved statistics and
// dY); outputs scale_grad = sum(dY * (X - mean) * inv_std) and
// bias_grad = sum(dY) per channel.
class ChannelBackpropStatsOp final : public Operator<CPUContext> {
 public:
  ChannelBackpropStatsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  bool channels_last_;
};

}  // namespace doppio
