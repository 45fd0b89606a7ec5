// Launchers of the CUDA gradient kernels of the broadcasting binary ops and
// of SumReduceLike (elementwise_gradient_op_gpu.cu), running the functors of
// broadcast_gradient_functors.h that the CPU ops run too. Raw pointers,
// plans and a stream only; instantiated for float and double. Every
// launcher queues work on `stream` and throws doppio::Error if a launch
// fails.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "operators/broadcast_gradient_functors.h"

namespace doppio {

enum class CudaBinaryGradientKind { kAdd, kSub, kMul, kDiv };

// The gradient of input `which` (0: A, 1: B) of C = f(A, B): each output
// element's part from (dc, a, b, c) through `mapper` (the forward
// broadcast), summed onto that input's shape through `reducer` into
// `target`. Inputs the gradient does not read may be null. `target` must
// not alias dc, a, b or c.
template <typename T>
void LaunchBinaryGradientCuda(CudaBinaryGradientKind kind,
                              const functors::BroadcastIndexMapper& mapper,
                              const functors::BroadcastReducer& reducer, int which, const T* dc,
                              const T* a, const T* b, const T* c, T* target,
                              cudaStream_t stream);

// SumReduceLike: c = a summed onto c's shape through `reducer`.
template <typename T>
void LaunchSumReduceLikeCuda(const functors::BroadcastReducer& reducer, const T* a, T* c,
                             cudaStream_t stream);

}  // namespace doppio
