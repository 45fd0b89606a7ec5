// What every grid-stride kernel file shares: the launch shape, the index
// walk, the launch check and a block-wide sum. For .cu files only (nvcc):
// it declares device functions.
#pragma once

#ifdef __CUDACC__

#include <cstdint>

#include <cuda_runtime.h>

#include "core/enforce.h"

namespace doppio {
namespace cuda_launch {

constexpr unsigned kThreads = 256;
// Enough blocks to fill any current GPU; grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 4096;

inline unsigned BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// After a launch: a bad configuration surfaces here, naming the kernel,
// instead of at the next unrelated CUDA call.
inline void CheckLaunch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  DOPPIO_ENFORCE(status == cudaSuccess, "CUDA kernel ", kernel, " launch failed: ",
                 cudaGetErrorString(status));
}

__device__ inline int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The sum of every thread's `value` over a block of kThreads threads,
// returned to all of them: a tree in shared memory, summed in double so the
// result does not depend on the order beyond double rounding. Every thread
// of the block must call it (it synchronizes the block).
__device__ inline double BlockSum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const double total = partial[0];
  // A second call reuses `partial`: nobody may write it before all have read.
  __syncthreads();
  return total;
}

}  // namespace cuda_launch
}  // namespace doppio

#endif  // __CUDACC__
