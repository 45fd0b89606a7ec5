// ConvTranspose and ConvTransposeGradient: the transposed ("fractionally
// strided") convolution, i.e. the input-gradient of Conv run forward.
//
//   X      [N, C, spatial...]          (NHWC: [N, spatial..., C])
//   filter [C, M / group, kernel...]   (NHWC: [C, kernel..., M / group])
//   bias   [M]                         (optional)
//   Y      [N, M, output...]           (NHWC: [N, output..., M])
//   output = (in - 1) * stride + dilation * (kernel - 1) + 1 + adj
//            - pad_begin - pad_end
//
// Arguments: Conv's (kernel, stride, pad(s), dilation, group, order,
// legacy_pad VALID/SAME meaning no padding) plus Caffe2's adj | adjs |
// adj_h + adj_w (default 0, at most the stride): extra output size at the
// end of each axis. CPU backend: GEMM + col2im, float32 and float64.
#pragma once

#include <cstdint>
#include <vector>

#include "operators/conv_pool_op_base.h"
#include "operators/im2col.h"

namespace doppio {

// The validated shapes of one transposed convolution call.
struct ConvTransposeProblem {
  StorageOrder order = StorageOrder::kNCHW;
  int64_t batch = 0;
  int64_t in_channels = 0;    // C
  int64_t out_channels = 0;   // M
  int64_t group = 1;
  int64_t in_per_group = 0;   // C / group
  int64_t out_per_group = 0;  // M / group
  std::vector<int64_t> input;   // spatial sizes of X
  std::vector<int64_t> output;  // spatial sizes of Y
  // im2col of one group of Y: its "image" is Y and its "output" X.
  Im2ColShape col;
  int64_t col_rows = 0;  // M / group * prod(kernel)
  int64_t input_image_size() const;
  int64_t output_image_size() const;
  std::vector<int64_t> OutputDims() const;
};

// Caffe2's adj | adjs | adj_h + adj_w (default 0), read and checked once
// from the OperatorDef, for the CPU and CUDA ops and shape inference.
class ConvTransposeAdj {
 public:
  explicit ConvTransposeAdj(const OperatorDef& def);
  // One value per spatial axis; errors name `op` and `input_name`.
  std::vector<int64_t> PerAxis(int num_spatial, const std::string& op,
                               const std::string& input_name) const;

 private:
  std::vector<int64_t> values_;  // as given: empty, one value, or one per axis
  bool scalar_ = false;
};

class ConvTransposeOpBase : public ConvPoolOpBase {
 public:
  ConvTransposeOpBase(const OperatorDef& def, Workspace* workspace);

 protected:
  // Checks X, the filter and (when non-null) the bias; errors name the op
  // and the blob.
  ConvTransposeProblem Resolve(const Tensor& X, const Tensor& filter,
                               const Tensor* bias) const;

 private:
  ConvTransposeAdj adj_;
};

class ConvTransposeOp final : public ConvTransposeOpBase {
 public:
  using ConvTransposeOpBase::ConvTransposeOpBase;
  void RunOnDevice() override;

 private:
  template <typename T>
  void Compute(const ConvTransposeProblem& p, const Tensor& X, const Tensor& filter,
               const Tensor* bias, Tensor* Y);
  Tensor col_buffer_;
  Tensor group_buffer_;
};

// Inputs X, filter, dY; outputs dfilter, then dbias unless no_bias, then dX
// when one more output is given (Caffe2's ordering).
class ConvTransposeGradientOp final : public ConvTransposeOpBase {
 public:
  ConvTransposeGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Compute(const ConvTransposeProblem& p, const Tensor& X, const Tensor& filter,
               const Tensor& dY, Tensor* dfilter, Tensor* dbias, Tensor* dX);
  bool no_bias_;
  Tensor col_buffer_;
  Tensor group_buffer_;
  Tensor group_out_buffer_;
};

}  // namespace doppio
