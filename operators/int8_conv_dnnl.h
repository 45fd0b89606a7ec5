// Int8Conv on oneDNN's int8 convolution: uint8 activations times int8
// weights accumulated in int32, then bias, scale, Relu, zero point and
// rounding to uint8 in the kernel's epilogue (float32 there, rounding to
// nearest even: within one step of the float32 path's result, and equal to
// it but where the real lies within float32 rounding of a step's midpoint).
// Used where the accumulation is exact: on CPUs with VNNI (AVX-512 VNNI and
// later), whose instructions add each product into 32 bits. Without VNNI
// oneDNN multiplies pairs into 16 bits and, to keep them from saturating,
// stores int8 weights halved, which would round them; those machines take
// the float32 path (int8_conv_op.h).
//
// Caffe2's filters are uint8 with a zero point; w - zero_point fits int8
// when every value lies within [zero_point - 128, zero_point + 127] (always
// with zero point 128). A filter that does not fit also takes the float32
// path. The input's zero point is not handed to oneDNN: padding is done here
// with the zero point's value (real 0), so every window sees whole images
// and sum (x - x_zp) w = sum x w - x_zp sum w, the last term folded into
// the int32 bias with one constant per output channel.
//
// Ownership: one object per op, holding its primitive, the filter in
// oneDNN's layout and the buffers. Thread-safety: one Run at a time.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <vector>

#include "core/tensor_int8.h"
#include "operators/conv_pool_op_base.h"
#include "operators/int8_utils.h"

namespace doppio {

// Whether oneDNN's int8 convolutions accumulate exactly on this machine.
bool DnnlInt8ConvIsExact();

class DnnlInt8Conv {
 public:
  // y [N, oH, oW, M] = requantize(conv(X - X.zero_point, W - W.zero_point) +
  // bias) into `yq` (bias: M int32 values, or null), clamped at the quantized
  // 0 when `relu`. False when this machine, filter or bias cannot (see
  // above); nothing is written then.
  bool Run(const ConvPoolGeometry& g, int64_t group, const int8::Int8TensorCPU& X,
           const int8::Int8TensorCPU& W, const int32_t* bias, const int8::Quantization& yq,
           bool relu, uint8_t* y);

 private:
  bool PrepareFilter(const int8::Int8TensorCPU& W);
  void PreparePrimitive(const ConvPoolGeometry& g, int64_t group, int64_t out_channels,
                        float multiplier, int32_t zero_point, bool relu);
  const uint8_t* PaddedInput(const ConvPoolGeometry& g, const int8::Int8TensorCPU& X);

  // The filter as last converted.
  const void* filter_data_ = nullptr;
  std::vector<int64_t> filter_dims_;
  int32_t filter_zero_point_ = 0;
  bool filter_fits_ = false;
  std::vector<int8_t> filter_s8_;  // [M, kH, kW, C / group]
  std::vector<int64_t> filter_sums_;
  bool filter_reordered_ = false;

  // oneDNN refused a primitive for this op once; it is not asked again.
  bool rejected_ = false;
  // The primitive for the last shape and epilogue.
  std::vector<double> key_;
  dnnl::convolution_forward primitive_;
  dnnl::memory::desc src_desc_, dst_desc_, bias_desc_, scratchpad_desc_;
  dnnl::memory weights_;
  std::vector<int32_t> bias_;  // bias - X.zero_point * filter sums
  std::vector<uint8_t> scratchpad_;
  std::vector<uint8_t> padded_;
};

}  // namespace doppio
