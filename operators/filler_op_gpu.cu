// Device fills and dropout: the Philox functors of elementwise_functors.h
// evaluated per element, so a seed gives the same numbers on any GPU (and on
// the CPU instantiation the tests check).
#include "operators/elementwise_op_gpu.h"

#include "core/enforce.h"

namespace doppio {
namespace {

constexpr unsigned kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

unsigned BlocksFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

void CheckLaunch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  DOPPIO_ENFORCE(status == cudaSuccess, "CUDA kernel ", kernel, " launch failed: ",
                 cudaGetErrorString(status));
}

__device__ inline int64_t FirstIndex() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void ConstantKernel(int64_t n, float value, float* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) y[i] = value;
}

template <typename F>
__global__ void GenerateKernel(F f, int64_t n, float* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) y[i] = f(i);
}

__global__ void DropoutKernel(functors::DropoutKeep keep, float scale, int64_t n, const float* x,
                              float* y, bool* mask) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const bool kept = keep(i);
    y[i] = kept ? x[i] * scale : 0.0f;
    mask[i] = kept;
  }
}

__global__ void DropoutGradientKernel(float scale, int64_t n, const float* dy, const bool* mask,
                                      float* dx) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

}  // namespace

void LaunchConstantFillCuda(int64_t n, float value, float* y, cudaStream_t stream) {
  if (n == 0) return;
  ConstantKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, value, y);
  CheckLaunch("ConstantKernel");
}

void LaunchUniformFillCuda(const functors::UniformFill& fill, int64_t n, float* y,
                           cudaStream_t stream) {
  if (n == 0) return;
  GenerateKernel<<<BlocksFor(n), kThreads, 0, stream>>>(fill, n, y);
  CheckLaunch("UniformFill kernel");
}

void LaunchGaussianFillCuda(const functors::GaussianFill& fill, int64_t n, float* y,
                            cudaStream_t stream) {
  if (n == 0) return;
  GenerateKernel<<<BlocksFor(n), kThreads, 0, stream>>>(fill, n, y);
  CheckLaunch("GaussianFill kernel");
}

void LaunchDropoutCuda(const functors::DropoutKeep& keep, float scale, int64_t n, const float* x,
                       float* y, bool* mask, cudaStream_t stream) {
  if (n == 0) return;
  DropoutKernel<<<BlocksFor(n), kThreads, 0, stream>>>(keep, scale, n, x, y, mask);
  CheckLaunch("DropoutKernel");
}

void LaunchDropoutGradientCuda(float scale, int64_t n, const float* dy, const bool* mask,
                               float* dx, cudaStream_t stream) {
  if (n == 0) return;
  DropoutGradientKernel<<<BlocksFor(n), kThreads, 0, stream>>>(scale, n, dy, mask, dx);
  CheckLaunch("DropoutGradientKernel");
}

}  // namespace doppio
