// Device fills and dropout: the Philox functors of elementwise_functors.h
// evaluated per element, so a seed gives the same numbers on any GPU (and on
// the CPU instantiation the tests check).
#include "operators/elementwise_op_gpu.h"

#include "core/enforce.h"
#include "operators/cuda_launch_gpu.h"

namespace doppio {
namespace {

using cuda_launch::BlocksFor;
using cuda_launch::CheckLaunch;
using cuda_launch::FirstIndex;
using cuda_launch::GridStride;
using cuda_launch::kThreads;

template <typename T>
__global__ void ConstantKernel(int64_t n, T value, T* y) {
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

template <typename T>
void LaunchConstantFillCuda(int64_t n, T value, T* y, cudaStream_t stream) {
  if (n == 0) return;
  ConstantKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(n, value, y);
  CheckLaunch("ConstantKernel");
}

template void LaunchConstantFillCuda<float>(int64_t, float, float*, cudaStream_t);
template void LaunchConstantFillCuda<double>(int64_t, double, double*, cudaStream_t);
template void LaunchConstantFillCuda<int32_t>(int64_t, int32_t, int32_t*, cudaStream_t);
template void LaunchConstantFillCuda<int64_t>(int64_t, int64_t, int64_t*, cudaStream_t);
template void LaunchConstantFillCuda<bool>(int64_t, bool, bool*, cudaStream_t);
template void LaunchConstantFillCuda<uint8_t>(int64_t, uint8_t, uint8_t*, cudaStream_t);
template void LaunchConstantFillCuda<uint16_t>(int64_t, uint16_t, uint16_t*, cudaStream_t);

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
