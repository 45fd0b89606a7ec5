// LpNorm(X) -> Z, as Caffe2's lpnorm_op (note: no root is taken):
//   p = 1: Z = sum |x|       p = 2: Z = sum x^2
// divided by X.numel() when `average`. LpNormGradient(X, dZ) -> dX:
//   p = 1: sign(x) * dZ      p = 2: 2 * x * dZ          (/ numel if average)
#pragma once

#include "core/operator.h"

namespace doppio {

class LpNormOp final : public Operator<CPUContext> {
 public:
  LpNormOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int p_;
  bool average_;
};

class LpNormGradientOp final : public Operator<CPUContext> {
 public:
  LpNormGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int p_;
  bool average_;
};

}  // namespace doppio
