// Permuting float32 tensors on oneDNN's JIT reorders (threaded, cache-aware),
// for Transpose and the NCHW2NHWC / NHWC2NCHW order switches that
// transforms/channels_last puts at region borders: the plain odometer loop
// gathers with the channel stride and ran several times slower.
//
// Thread-safe: primitives are cached per thread.
#pragma once

#include <cstdint>
#include <vector>

namespace doppio {

// y = x permuted: output dim i is input dim axes[i] of `in_dims`. False (y
// untouched) when oneDNN cannot do it or the tensor is too small to gain;
// the caller then permutes itself.
bool DnnlPermuteFloat(const std::vector<int64_t>& in_dims, const std::vector<int>& axes,
                      const float* x, float* y);

}  // namespace doppio
