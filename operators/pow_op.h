// Pow: Y = X ^ exponent, the exponent given as argument `exponent` or as a
// second tensor (same shape as X, or Caffe2's legacy broadcast with
// broadcast=1). Its gradient is built from Pow, Mul, Scale, Sub, Log and
// SumReduceLike, as in Caffe2.
#pragma once

#include "core/operator.h"
#include "operators/elementwise_ops_utils.h"

namespace doppio {

class PowOp final : public Operator<CPUContext> {
 public:
  PowOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  void RunWithScalarExponent();
  void RunWithTensorExponent();

  bool has_exponent_argument_;
  float exponent_;
  BroadcastArgs args_;
};

}  // namespace doppio
