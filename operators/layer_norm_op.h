// LayerNorm and InstanceNorm with their gradients, as in Caffe2.
//
// LayerNorm normalizes each row of X viewed as [M, N] (M = product of the
// dims before `axis`, N = the rest): Y = (X - mean) / std, with
// std = sqrt(var + epsilon), optionally followed by an elementwise affine
// gamma * Y + beta (elementwise_affine=1, gamma and beta of N elements).
// Outputs mean and std have shape X.dims[:axis] + [1].
//
// InstanceNorm normalizes every (sample, channel) plane of an NCHW or NHWC
// input on its own, then scales and shifts it per channel; it can save the
// mean and 1 / sqrt(var + epsilon) of each plane (shape [N, C]) for its
// gradient.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs X [, gamma, beta]; outputs Y, mean, std.
class LayerNormOp final : public Operator<CPUContext> {
 public:
  LayerNormOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  int axis_;
  double epsilon_;
  bool elementwise_affine_;
};

// Inputs dY, Y, mean, std, X [, gamma]; outputs dX [, dgamma, dbeta].
class LayerNormGradientOp final : public Operator<CPUContext> {
 public:
  LayerNormGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  int axis_;
};

// Inputs X, scale, bias; outputs Y [, saved_mean [, saved_inv_stdev]].
class InstanceNormOp final : public Operator<CPUContext> {
 public:
  InstanceNormOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  double epsilon_;
  bool channels_last_;
};

// Inputs X, scale, bias, dY [, saved_mean [, saved_inv_stdev]]; outputs dX,
// dscale, dbias. Statistics that were not saved are recomputed from X.
class InstanceNormGradientOp final : public Operator<CPUContext> {
 public:
  InstanceNormGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  double epsilon_;
  bool channels_last_;
};

}  // namespace doppio
