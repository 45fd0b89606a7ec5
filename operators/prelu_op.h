// PRelu: Relu with a learned slope for negative inputs, one per channel or
// one shared by all; PReluGradient produces the gradients of X and Slope.
#pragma once

#include <string>

#include "core/operator.h"

namespace doppio {

// Inputs X (float32/float64) and Slope (X's type, 1 element or one per
// channel); output Y, which may be X. Argument order: "NCHW" (channels are
// dim 1) or "NHWC" (channels are the last dim).
class PReluOp final : public Operator<CPUContext> {
 public:
  PReluOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool channels_last_;
};

// Inputs Y, dY, X, Slope; outputs dX, dSlope. X must be a separate blob
// from Y: a PRelu run in place has lost the inputs its gradient needs.
class PReluGradientOp final : public Operator<CPUContext> {
 public:
  PReluGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool channels_last_;
};

}  // namespace doppio
