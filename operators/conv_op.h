// Conv (and its aliases Conv1D/Conv2D/Conv3D) and ConvGradient: N-d
// convolution with groups, dilation and per-side pads, in NCHW or NHWC.
//
//   X      [N, C, spatial...]            (NHWC: [N, spatial..., C])
//   filter [M, C / group, kernel...]     (NHWC: [M, kernel..., C / group])
//   bias   [M]                           (optional)
//   Y      [N, M, output...]             (NHWC: [N, output..., M])
//
// Two CPU backends: oneDNN (float32, the default wherever it accepts the
// case) and im2col + GEMM (every case, float32 and float64). Engine "IM2COL"
// forces the second, which the tests use to cross-check the first; engine
// "DNNL" (or none) prefers oneDNN.
#pragma once

#include <cstdint>
#include <memory>

#include "operators/conv_pool_op_base.h"
#include "operators/im2col.h"

namespace doppio {

class DnnlConvForward;
class DnnlConvBackward;

// The validated shapes of one convolution call.
struct ConvProblem {
  ConvPoolGeometry geometry;  // of X
  int64_t out_channels = 0;   // M
  int64_t group = 1;
  int64_t in_per_group = 0;   // C / group
  int64_t out_per_group = 0;  // M / group
  Im2ColShape col;            // one group's im2col shape
  int64_t kernel_dim = 0;     // C / group * prod(kernel): the GEMM's K
};

// Shared by Conv and ConvGradient: argument parsing plus input validation.
class ConvOpBase : public ConvPoolOpBase {
 public:
  ConvOpBase(const OperatorDef& def, Workspace* workspace);

 protected:
  // Checks X, the filter and (when non-null) the bias against each other and
  // the arguments; every failure names the op and the blob.
  ConvProblem ResolveConv(const Tensor& X, const Tensor& filter, const Tensor* bias) const;
  // Whether the def asks for the im2col backend (engine "IM2COL").
  bool force_im2col() const { return force_im2col_; }

 private:
  bool force_im2col_ = false;
};

class ConvOp final : public ConvOpBase {
 public:
  ConvOp(const OperatorDef& def, Workspace* workspace);
  ~ConvOp() override;
  void RunOnDevice() override;

 private:
  template <typename T>
  void RunIm2Col(const ConvProblem& p, const Tensor& X, const Tensor& filter, const Tensor* bias,
                 Tensor* Y);

  Tensor col_buffer_;
  Tensor group_buffer_;  // NHWC with groups: one group's output before scattering
  std::unique_ptr<DnnlConvForward> dnnl_;
};

// Inputs X, filter, dY; outputs dfilter, then dbias unless no_bias, then dX
// when one more output is given (Caffe2's ordering).
class ConvGradientOp final : public ConvOpBase {
 public:
  ConvGradientOp(const OperatorDef& def, Workspace* workspace);
  ~ConvGradientOp() override;
  void RunOnDevice() override;

 private:
  template <typename T>
  void RunIm2Col(const ConvProblem& p, const Tensor& X, const Tensor& filter, const Tensor& dY,
                 Tensor* dfilter, Tensor* dbias, Tensor* dX);

  bool no_bias_;
  Tensor col_buffer_;
  Tensor group_buffer_;
  std::unique_ptr<DnnlConvBackward> dnnl_;
};

// Adds bias[m] to every value of channel m of Y ([N, M, P] when NCHW,
// [N, P, M] when NHWC); and the matching reduction for the gradient.
template <typename T>
void AddChannelBias(StorageOrder order, int64_t batch, int64_t channels, int64_t image_size,
                    const T* bias, T* Y);
template <typename T>
void SumPerChannel(StorageOrder order, int64_t batch, int64_t channels, int64_t image_size,
                   const T* dY, T* dbias);

}  // namespace doppio
