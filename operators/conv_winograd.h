// Winograd F(4x4, 3x3) for float32 NHWC convolutions at inference, where
// oneDNN has no Winograd kernel: oneDNN 2.6 has one for AVX-512 only (and
// there for channel counts that are multiples of 16), so on AVX2 every 3x3
// convolution ran direct, compute-bound near the machine's peak. A 4x4
// output tile costs 36 multiply-adds per input/output channel pair instead
// of 144: each 6x6 input patch is transformed (B^T d B), the 36 transformed
// points are 36 GEMMs [tiles x C] x [C x M] (oneDNN's sgemm), and each
// product is transformed back (A^T m A) with the bias, a summand and a
// clamp-like activation applied on the way out. Measured on AVX2 at batch 1
// against oneDNN's direct kernels: 2.0-2.9x from 64 channels at 14x14 to
// 56x56 outputs (conv_op_dnnl.cc decides when it runs).
//
// The values differ from a direct convolution's by rounding (the
// transforms scale by up to 8 and 1/24): about 1e-5 relative to the output's
// magnitude, as oneDNN's Winograd.
//
// Thread-safety: one Run at a time per object (it belongs to one op). The
// tile buffers live in the calling thread's ThreadArena during Run; the
// transformed filter is kept by the object.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "operators/conv_op.h"
#include "operators/dnnl_eltwise.h"

namespace doppio {

// Whether the kernel computes p: 2-D, NHWC, one group, a 3x3 kernel of unit
// stride and dilation (any pads).
bool WinogradF43Handles(const ConvProblem& p);

class WinogradF43Conv {
 public:
  // y = act(conv(x, w) + bias + sum) in NHWC; w is the NHWC filter
  // [M, 3, 3, C]. bias and sum may be null; sum may be y itself (each output
  // is read before it is written, once). The filter's transform is kept and
  // redone when w's storage or the shape changes: an inference filter is a
  // constant, as oneDNN's constant_filter assumes too.
  void Run(const ConvProblem& p, const float* x, const float* w, const float* bias,
           const float* sum, const EltwiseFn& act, float* y);

 private:
  void TransformFilter(int64_t C, int64_t M, const float* w);

  Tensor filter_;  // [36][C][M]: G g G^T of every (m, c)
  const float* filter_source_ = nullptr;
  int64_t filter_c_ = -1, filter_m_ = -1;
};

}  // namespace doppio
