// Tile (Caffe2's tile_op): copies a tensor `tiles` times along `axis`, and
// its gradient, the sum over the copies.
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

// Input 0: X; optional inputs 1 (tiles) and 2 (axis), one-element integer
// tensors that override the arguments. Output: X with dim `axis` times
// `tiles` (the whole slab from `axis` on repeated for each outer index).
class TileOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs: dY, then TileOp's optional tiles / axis inputs; output dX, the
// sum of dY's `tiles` copies.
class TileGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
