// Dropout and its gradient DropoutGrad (Caffe2's names).
//
// In training (is_test=0) each element is kept with probability 1 - ratio
// and kept values are scaled by 1 / (1 - ratio), so nothing needs rescaling
// at test time; the mask (bool, true = kept) is the second output and
// DropoutGrad's second input. The draws come from the op's own generator,
// seeded by DeviceOption.random_seed, so a seeded net repeats its masks.
#pragma once

#include "core/operator.h"

namespace doppio {

// The arguments of Dropout and DropoutGrad, CPU and CUDA: `ratio` in
// [0, 1) (default 0.5) and `is_test`. Training mode needs the mask: as
// Dropout's second output, or DropoutGrad's second input when `gradient`.
struct DropoutArgs {
  float ratio = 0.5f;
  bool is_test = false;
};
DropoutArgs ReadDropoutArgs(const OperatorBase& op, bool gradient);

// Input X (float32 or float64); outputs Y (may be X) and, optionally in
// test mode and required in training, mask.
class DropoutOp final : public Operator<CPUContext> {
 public:
  DropoutOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  DropoutArgs args_;
};

// Inputs dY and (in training) mask; output dX (may be dY). Takes Dropout's
// arguments.
class DropoutGradientOp final : public Operator<CPUContext> {
 public:
  DropoutGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  DropoutArgs args_;
};

}  // namespace doppio
