// AffineChannel and AffineChannelGradient (Caffe2's, from Detectron, which
// replaces a frozen SpatialBN by it): Y = X * scale[c] + bias[c] per channel
// of an NCHW or NHWC tensor of rank >= 2.
//
// Thread-safety: as any op; the channels (NHWC: rows) are split across the
// intra-op threads, and each channel's sums run in one fixed order.
#pragma once

#include "core/operator.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {

// Inputs X, scale [C], bias [C]; output Y (may be X: in place).
class AffineChannelOp final : public Operator<CPUContext> {
 public:
  AffineChannelOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  StorageOrder order_;
};

// is_learnable: inputs dY, X, scale; outputs dX, dscale, dbias. Otherwise
// inputs dY, scale; output dX (which may be dY).
class AffineChannelGradientOp final : public Operator<CPUContext> {
 public:
  AffineChannelGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  StorageOrder order_;
  bool is_learnable_;
};

}  // namespace doppio
