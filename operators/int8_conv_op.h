// Caffe2's quantized convolution, transposed convolution and fully
// connected ops (NHWC, uint8):
//   Int8Conv, Int8ConvRelu   X [N, H, W, C], filter [M, kH, kW, C / group],
//                            optional bias [M] (int32, scale X.scale x
//                            filter.scale, zero point 0) -> Y [N, oH, oW, M]
//   Int8FC                   X [M, K...] (flattened after axis 0), W [N, K],
//                            bias [N] -> Y [M, N]
// with Conv's arguments (kernel, stride, pad, dilation, group; order must be
// NHWC) and the output's Y_scale / Y_zero_point.
//
// Kernels: on CPUs with VNNI a convolution or FC (as a 1x1 convolution)
// whose filter fits int8 runs on oneDNN's int8 convolution
// (int8_conv_dnnl.h), exact in int32, requantized in its epilogue.
// Otherwise (and for ConvTranspose) the integers minus their zero points go
// through the float32 kernels (int8_twin_op.h; a direct convolution, never
// Winograd, whose transforms would round), where products of integers of at
// most 255 accumulate exactly, and the int32 bias is added and the sum
// scaled by X.scale x W.scale / Y_scale and rounded once in float64. The two
// paths agree but where the scaled sum lies within float32 rounding of a
// step's midpoint, and there by one step. Filter copies are kept while the
// filter's storage, shape and zero point stay the same.
//
// Thread-safety: one Run at a time per op.
#pragma once

#include <vector>

#include "core/context.h"
#include "core/operator.h"
#include "operators/conv_pool_op_base.h"
#include "operators/int8_conv_dnnl.h"
#include "operators/int8_twin_op.h"
#include "operators/int8_utils.h"

namespace doppio {

// The filter's float copy, redone when the filter changes.
class CenteredWeights {
 public:
  void Update(const int8::Int8TensorCPU& w, Tensor* destination);

 private:
  const void* data_ = nullptr;
  std::vector<int64_t> dims_;
  int32_t zero_point_ = 0;
};

template <bool kRelu>
class Int8ConvOp final : public Operator<CPUContext> {
 public:
  Int8ConvOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // X's and the filter's shapes checked against each other and the arguments.
  ConvPoolGeometry Geometry(const Tensor& x, const Tensor& w) const;

  int8::Quantization y_;
  ConvPoolArgs args_;
  DnnlInt8Conv dnnl_;         // oneDNN int8, where exact (int8_conv_dnnl.h)
  TwinOp twin_;               // float32 otherwise
  CenteredWeights weights_;
  std::vector<int64_t> offsets_;  // the bias, for the float32 path
};

// Int8ConvTranspose: X [N, H, W, C], filter [C, kH, kW, M] (uint8), bias
// [M] (int32) -> Y [N, oH, oW, M], with ConvTranspose's arguments (stride,
// pads, adj; order NHWC), on the float32 ConvTranspose.
class Int8ConvTransposeOp final : public Operator<CPUContext> {
 public:
  Int8ConvTransposeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
  TwinOp twin_;
  CenteredWeights weights_;
  std::vector<int64_t> offsets_;
};

class Int8FCOp final : public Operator<CPUContext> {
 public:
  Int8FCOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
  DnnlInt8Conv dnnl_;  // as a 1x1 convolution, where exact
  TwinOp twin_;
  CenteredWeights weights_;
  std::vector<int64_t> offsets_;
};

}  // namespace doppio
