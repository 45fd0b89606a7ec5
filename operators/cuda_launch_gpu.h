// What every grid-stride kernel file shares: the launch shape, the index
// walk and the launch check. For .cu files only (nvcc): it declares device
// functions.
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

}  // namespace cuda_launch
}  // namespace doppio

#endif  // __CUDACC__
