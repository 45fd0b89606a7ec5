// Dynamic loss scaling for float16 training (what PyTorch's GradScaler does
// between backward and the optimizer step), as two ops a graph pass places
// after the gradient reductions (parallel/mixed_precision.h):
//
//   UnscaleGradients(g_1 .. g_n, scale) -> (g_1 .. g_n, finite)
//       finite: one bool, whether every element of every gradient is finite;
//       only then are the gradients divided by the scale (in place)
//   UpdateLossScale(finite, scale, good_steps, skipped_steps)
//       -> (scale, good_steps, skipped_steps), in place
//       a non-finite step multiplies the scale by backoff_factor, counts a
//       skipped step and restarts the run of good steps; growth_interval
//       good steps in a row multiply it by growth_factor
//
// Every replica runs both on the same reduced gradients, so every replica
// reads the same flag and skips the same steps.
#pragma once

#include "core/operator.h"

namespace doppio {

class UnscaleGradientsOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class UpdateLossScaleOp final : public Operator<CPUContext> {
 public:
  UpdateLossScaleOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float growth_factor_, backoff_factor_;
  int64_t growth_interval_;
};

}  // namespace doppio
