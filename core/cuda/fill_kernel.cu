#include "core/cuda/fill_kernel.h"

#include "core/enforce.h"

namespace doppio {
namespace {

__global__ void FillFloatKernel(float* data, size_t count, float value) {
  // Grid-stride loop: any count works with a capped grid.
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

}  // namespace

void LaunchFillFloat(float* data, size_t count, float value, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned kThreads = 256;
  constexpr size_t kMaxBlocks = 4096;
  size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  FillFloatKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(data, count, value);
  const cudaError_t status = cudaGetLastError();
  DOPPIO_ENFORCE(status == cudaSuccess, "FillFloatKernel launch failed: ",
                 cudaGetErrorString(status));
}

}  // namespace doppio
