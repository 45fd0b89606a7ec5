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
#include <cstring>
#include <memory>
#include <vector>

#include "core/gradient.h"
#include "operators/conv_pool_op_base.h"
#include "operators/dnnl_eltwise.h"
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

// Which algorithm a float32 convolution runs: Caffe2 ideep's conv_algorithm
// argument (0 auto, 1 Winograd) plus Doppio's 2, direct only. Auto takes
// Winograd where it measured faster (conv_op_dnnl.cc says where). Where
// oneDNN has no Winograd kernel (AVX2, channels not a multiple of 16), an
// inference convolution in NHWC runs Doppio's own (operators/conv_winograd.h);
// otherwise Winograd falls back to direct (training on AVX2, strides,
// kernels other than 3x3).
enum class ConvAlgorithm : int { kAuto = 0, kWinograd = 1, kDirect = 2 };

// The def's conv_algorithm; anything but 0, 1 or 2 is refused, naming it.
ConvAlgorithm ReadConvAlgorithm(const OperatorDef& def);

// The problem of a checked geometry: channels and out_channels divide by
// group.
ConvProblem ConvProblemOf(const ConvPoolGeometry& geometry, int64_t out_channels, int64_t group);

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
  ConvAlgorithm conv_algorithm() const { return conv_algorithm_; }

 private:
  bool force_im2col_ = false;
  ConvAlgorithm conv_algorithm_;
};

// Caffe2's ConvFusion fusion types (ideep's FusionType): Conv + activation
// (Relu by default as in Caffe2, or the activation the argument `activation`
// names, a Doppio extension written by the fusion pass), Conv + sum with the
// last input, and that sum + activation.
enum ConvFusionType : int {
  kConvFusionUnknown = 0,
  kConvFusionRelu = 1,
  kConvFusionSum = 2,
  kConvFusionSumRelu = 3,
};

// Conv, and ConvFusion (an inference-only Conv whose activation runs inside
// the kernel: a oneDNN post-op, or one pass over Y after im2col + GEMM).
class ConvOp final : public ConvOpBase {
 public:
  ConvOp(const OperatorDef& def, Workspace* workspace);
  ~ConvOp() override;
  void RunOnDevice() override;

 private:
  template <typename T>
  void RunIm2Col(const ConvProblem& p, const Tensor& X, const Tensor& filter, const Tensor* bias,
                 Tensor* Y);

  // ConvFusion's sum fusions: the checked summand S (the last input), else
  // null.
  const Tensor* Summand(const Tensor& X, const std::vector<int64_t>& out_dims) const;

  int fusion_type_;  // ConvFusion's; kConvFusionUnknown for Conv
  // ConvFusion's activation (empty for Conv).
  EltwiseFn post_op_;
  // Caffe2 ideep's training_mode 0: a forward-only use (an inference
  // primitive on oneDNN).
  bool inference_;
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

// A per-op scratch buffer (kept across runs, so its storage is reused) of
// `count` elements of T.
template <typename T>
T* ScratchBuffer(Tensor& buffer, int64_t count) {
  buffer.Resize({count});
  return buffer.template mutable_data<T>();
}

// NHWC with groups, where a group's channels interleave with the others':
// copies the `group_channels` channels of group `group` at each of `pixels`
// positions of an image of `channels` channels into a dense
// [pixels x group_channels] buffer, and back.
template <typename T>
void GatherGroupChannels(int64_t pixels, int64_t channels, int64_t group_channels,
                         int64_t group, const T* image, T* dense) {
  for (int64_t i = 0; i < pixels; ++i) {
    std::memcpy(dense + i * group_channels, image + i * channels + group * group_channels,
                group_channels * sizeof(T));
  }
}
template <typename T>
void ScatterGroupChannels(int64_t pixels, int64_t channels, int64_t group_channels,
                          int64_t group, const T* dense, T* image) {
  for (int64_t i = 0; i < pixels; ++i) {
    std::memcpy(image + i * channels + group * group_channels, dense + i * group_channels,
                group_channels * sizeof(T));
  }
}

// ---- shared by Conv and ConvTranspose (and their gradients) ----

// X (input 0) has 1 to 3 spatial dims in `order`; the filter (input 1) has
// X's rank and type.
void CheckConvInputAndFilter(const OperatorBase& op, StorageOrder order, const Tensor& X,
                             const Tensor& filter);
// The bias (input 2) has X's type and one value per output channel.
void CheckChannelBias(const OperatorBase& op, const Tensor& X, const Tensor& bias,
                      int64_t out_channels);

// The gradient ops' argument no_bias; with it there is no bias gradient, so
// there are at most two outputs.
bool ReadNoBias(const OperatorBase& op);

// dY (input 2) has X's type and the forward output's shape `y_dims`;
// `forward_output` names that output in errors.
void CheckOutputGradient(const OperatorBase& op, const Tensor& X, const Tensor& dY,
                         const std::vector<int64_t>& y_dims, const char* forward_output);

// Caffe2's order of the gradient outputs: dfilter, then dbias unless
// no_bias, then dX when one more output is given. Absent ones are null.
struct ConvGradientOutputs {
  Tensor* dfilter = nullptr;
  Tensor* dbias = nullptr;
  Tensor* dX = nullptr;
};

// Picks and resizes the gradient outputs; output(i) returns the op's output
// i (Output is protected, so the op passes it in).
template <typename OutputFn>
ConvGradientOutputs ResizeConvGradientOutputs(const OperatorBase& op, bool no_bias,
                                              const Tensor& X, const Tensor& filter,
                                              int64_t out_channels, OutputFn&& output) {
  ConvGradientOutputs outputs;
  outputs.dfilter = output(0);
  outputs.dfilter->Resize(filter.dims());
  if (!no_bias) {
    DOPPIO_ENFORCE(op.OutputSize() >= 2, "without no_bias the second output is the bias gradient");
    outputs.dbias = output(1);
    outputs.dbias->Resize({out_channels});
  }
  if (op.OutputSize() == (no_bias ? 2 : 3)) {
    outputs.dX = output(op.OutputSize() - 1);
    outputs.dX->Resize(X.dims());
  }
  return outputs;
}

// Shape inference of those outputs from the forward X and filter shapes;
// `bias_channels` < 0 leaves dbias unknown.
std::vector<TensorShape> ConvGradientShapes(const OperatorDef& def, const TensorShape& X,
                                            const TensorShape& filter, int64_t bias_channels);

// <Op>Gradient(X, filter, dY) -> (dfilter[, dbias][, dX]) for Conv, its
// Conv1D/2D/3D aliases and ConvTranspose; no_bias tells the gradient op
// whether the forward op had a bias.
class GetConvGradient final : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override;
};

}  // namespace doppio
