// Launchers of the CUDA Scale, Sum and WeightedSum kernels (math_op_gpu.cu),
// running the functors of math_functors.h that the CPU ops run too. Raw
// pointers, sizes and a stream only; every launcher queues work on `stream`
// and throws doppio::Error if the launch fails; n == 0 is a no-op.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "operators/math_functors.h"

namespace doppio {

// y = scale * x; y may alias x. T: float, double.
template <typename T>
void LaunchScaleCuda(int64_t n, float scale, const T* x, T* y, cudaStream_t stream);

// total += x. T: float, double, int32_t, int64_t.
template <typename T>
void LaunchSumIntoCuda(int64_t n, const T* x, T* total, cudaStream_t stream);

// y = w * x (accumulate false; y may alias x) or y += w * x, with the
// weight converted to T. (T, W): (float, float), (double, float),
// (double, double).
template <typename T, typename W>
void LaunchWeightedTermCuda(int64_t n, const functors::ScalarOperand<W>& w, const T* x,
                            bool accumulate, T* y, cudaStream_t stream);

}  // namespace doppio
