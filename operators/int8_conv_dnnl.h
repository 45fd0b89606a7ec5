// Int8Conv on oneDNN's int8 convolution: uint8 activations times int8
// weights, accumulated in int32. Used where that is exact: on CPUs with VNNI
// (AVX-512 VNNI and later), whose instructions add each product into 32
// bits. Without VNNI oneDNN multiplies pairs into 16 bits and, to keep them
// from saturating, stores int8 weights halved, which would round them; those
// machines take the float32 path (int8_conv_op.h).
//
// Caffe2's filters are uint8 with a zero point; w - zero_point fits int8
// when every value lies within [zero_point - 128, zero_point + 127] (always
// with zero point 128). A filter that does not fit also takes the float32
// path. The input's zero point is not handed to oneDNN: padding is done here
// with the zero point's value (real 0), so every window sees whole images
// and sum (x - x_zp) w = sum x w - x_zp sum w, the last term one constant
// per output channel (filter_sums).
//
// Ownership: one object per op, holding its primitive, the filter in
// oneDNN's layout and the buffers. Thread-safety: one Run at a time.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <vector>

#include "core/tensor_int8.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {

// Whether oneDNN's int8 convolutions are exact on this machine (VNNI).
bool DnnlInt8ConvIsExact();

class DnnlInt8Conv {
 public:
  // acc [N, oH, oW, M] = conv(X - X.zero_point padded, W - W.zero_point) +
  // X.zero_point * filter_sums() (the caller subtracts that term). False
  // when this machine or filter cannot (see above); nothing is written then.
  bool Run(const ConvPoolGeometry& g, int64_t group, const int8::Int8TensorCPU& X,
           const int8::Int8TensorCPU& W, std::vector<int32_t>* acc);
  // Per output channel: the sum of W - W.zero_point.
  const std::vector<int32_t>& filter_sums() const { return filter_sums_; }

 private:
  bool PrepareFilter(const int8::Int8TensorCPU& W);
  void PreparePrimitive(const ConvPoolGeometry& g, int64_t group, int64_t out_channels);
  const uint8_t* PaddedInput(const ConvPoolGeometry& g, const int8::Int8TensorCPU& X);

  // The filter as last converted.
  const void* filter_data_ = nullptr;
  std::vector<int64_t> filter_dims_;
  int32_t filter_zero_point_ = 0;
  bool filter_fits_ = false;
  std::vector<int8_t> filter_s8_;  // [M, kH, kW, C / group]
  std::vector<int32_t> filter_sums_;
  bool filter_reordered_ = false;

  // The primitive for the last shape.
  std::vector<int64_t> key_;
  dnnl::convolution_forward primitive_;
  dnnl::memory::desc src_desc_, dst_desc_, scratchpad_desc_;
  dnnl::memory weights_;
  std::vector<uint8_t> scratchpad_;
  std::vector<uint8_t> padded_;
};

}  // namespace doppio
