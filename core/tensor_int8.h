// Int8TensorCPU: Caffe2's quantized tensor, a Tensor plus the affine
// quantization that maps its integers to reals:
//   real = scale * (q - zero_point).
// Activations and weights hold uint8; biases hold int32 (their scale is, by
// convention, input scale x weight scale and their zero point 0). Layout is
// NHWC for images, as in Caffe2's Int8 ops.
//
// Ownership: a plain value; the blob that holds it owns it.
// Thread-safety: none, like Tensor.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace doppio {
namespace int8 {

struct Int8TensorCPU {
  float scale = 1.0f;
  int32_t zero_point = 0;
  Tensor t;
};

}  // namespace int8
}  // namespace doppio
