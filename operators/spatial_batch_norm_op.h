// SpatialBN (batch normalization over every dim but the channel one) and
// its gradient, with Caffe2's inputs, outputs and arguments.
//
// Training (is_test=0) normalizes with the batch's own statistics, updates
// the running mean and variance in place (inputs 3/4 are outputs 1/2),
//   running = momentum * running + (1 - momentum) * batch statistic,
// where the running variance takes the unbiased batch variance (R / (R - 1)
// times the biased one, R values per channel), and saves the batch mean and
// 1 / sqrt(var + epsilon) for SpatialBNGradient. Test mode (is_test=1)
// normalizes with the given mean and variance and has only output Y.
#pragma once

#include "core/operator.h"

namespace doppio {

// Arguments shared by SpatialBN and SpatialBNGradient.
struct SpatialBNArgs {
  bool is_test = false;
  double epsilon = 1e-5;
  double momentum = 0.9;
  bool channels_last = false;
  // >1: the batch statistics come from inputs 5/6 (per-channel sums and sums
  // of squares over num_batches batches) rather than from X alone.
  int num_batches = 1;
};
SpatialBNArgs ReadSpatialBNArgs(const OperatorBase& op);

// Inputs X, scale, bias, mean, var [, sums, sumsq]; outputs Y, or in
// training Y, running_mean, running_var, saved_mean, saved_inv_std.
class SpatialBNOp final : public Operator<CPUContext> {
 public:
  SpatialBNOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  // The batch mean and biased variance per channel, from X or from the
  // multi-batch sums.
  template <typename T>
  void BatchMoments(const Tensor& X, int64_t batch, int64_t channels, int64_t inner,
                    double* mean, double* var) const;
  SpatialBNArgs args_;
};

// Inputs X, scale, dY, saved_mean, saved_inv_std [, dscale_sum, dbias_sum];
// outputs dX, dscale, dbias. With is_test=1, inputs 3/4 are the running mean
// and variance the forward op used, held fixed.
class SpatialBNGradientOp final : public Operator<CPUContext> {
 public:
  SpatialBNGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  SpatialBNArgs args_;
};

}  // namespace doppio
