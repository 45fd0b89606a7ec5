// SpatialNarrowAs and SpatialNarrowAsGradient (Detectron's, for FPN's
// odd-sized levels): A cut down to B's height and width, keeping the top
// left.
//
//   A [N, C, H0, W0] (or [N, H0, W0]); B [N, C, H1, W1] or [N, H1, W1]
//   with H1 <= H0, W1 <= W0 -> C [N, C, H1, W1] (A's rank)
//
// Thread-safety: as any op.
#pragma once

#include "core/operator.h"

namespace doppio {

class SpatialNarrowAsOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs A, B, dC; output dA: dC in the top left, zeros elsewhere.
class SpatialNarrowAsGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
