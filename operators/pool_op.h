// MaxPool, AveragePool and LpPool (1-D to 3-D, NCHW or NHWC, global
// pooling) and their gradients, as in Caffe2. LpPool takes the p-norm of
// each window, (sum |x|^p)^(1/p), with argument p (default 2). The argument handling (kernel,
// stride, pads, order, legacy_pad, global_pooling) is ConvPoolOpBase's; the spelled-out variants
// MaxPool1D/2D/3D and AveragePool1D/2D/3D are the same ops restricted to inputs with that many
// spatial dims.
//
// AveragePool divides by the number of input elements inside the window
// unless count_include_pad=1, which divides by the full kernel size (padding
// counted as zeros). MaxPoolGradient routes dY to the first input element
// (row-major) equal to the window's maximum. Windows may be dilated (taps
// `dilation` apart; the CUDA ops run those on the CPU kernels). MaxPool takes
// every numeric type and can also output each maximum's index (ONNX's
// Indices, storage_order 0 or 1).
#pragma once

#include "operators/conv_pool_op_base.h"

namespace doppio {

// Average pooling's count_include_pad (default 0), for the CPU and CUDA ops.
bool ReadCountIncludePad(const OperatorBase& op);

enum class PoolKind { kMax, kAverage, kLp };

// The pooling checks on top of ConvPoolOpBase: pads smaller than the
// (dilated) kernel, and the spatial rank the op's name asks for.
class PoolOpBase : public ConvPoolOpBase {
 public:
  PoolOpBase(const OperatorDef& def, Workspace* workspace);

 protected:
  ConvPoolGeometry PoolGeometry(const Tensor& X) const;
  bool count_include_pad() const { return count_include_pad_; }
  double p() const { return p_; }

 private:
  int required_spatial_dims_;  // 0: any; 1-3 for the *1D/*2D/*3D variants
  bool count_include_pad_;
  double p_;  // LpPool's norm order
};

// Input X; output Y, and for MaxPool optionally Indices (int64, ONNX's).
template <PoolKind kKind>
class PoolOp final : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  template <typename T>
  void WriteIndices();
};

// Inputs X, Y, dY; output dX.
template <PoolKind kKind>
class PoolGradientOp final : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
};

}  // namespace doppio
