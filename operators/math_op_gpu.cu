// Scale, Sum and WeightedSum kernels: grid-stride loops over the functors of
// math_functors.h.
#include "operators/math_op_gpu.h"

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
__global__ void ScaleKernel(functors::Scale scale, int64_t n, const T* x, T* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) y[i] = scale(x[i]);
}

template <typename T>
__global__ void SumIntoKernel(int64_t n, const T* x, T* total) {
  const functors::SumTerm add;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) total[i] = add(total[i], x[i]);
}

template <typename T, typename W>
__global__ void WeightedTermKernel(int64_t n, functors::ScalarOperand<W> w, const T* x,
                                   bool accumulate, T* y) {
  const T weight = static_cast<T>(w.Get());
  const functors::WeightedTerm term;
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    y[i] = accumulate ? term.Accumulate(y[i], weight, x[i]) : term.First(weight, x[i]);
  }
}

}  // namespace

template <typename T>
void LaunchScaleCuda(int64_t n, float scale, const T* x, T* y, cudaStream_t stream) {
  if (n == 0) return;
  ScaleKernel<<<BlocksFor(n), kThreads, 0, stream>>>(functors::Scale{scale}, n, x, y);
  CheckLaunch("ScaleKernel");
}

template <typename T>
void LaunchSumIntoCuda(int64_t n, const T* x, T* total, cudaStream_t stream) {
  if (n == 0) return;
  SumIntoKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, x, total);
  CheckLaunch("SumIntoKernel");
}

template <typename T, typename W>
void LaunchWeightedTermCuda(int64_t n, const functors::ScalarOperand<W>& w, const T* x,
                            bool accumulate, T* y, cudaStream_t stream) {
  if (n == 0) return;
  WeightedTermKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, w, x, accumulate, y);
  CheckLaunch("WeightedTermKernel");
}

template void LaunchScaleCuda<float>(int64_t, float, const float*, float*, cudaStream_t);
template void LaunchScaleCuda<double>(int64_t, float, const double*, double*, cudaStream_t);
template void LaunchSumIntoCuda<float>(int64_t, const float*, float*, cudaStream_t);
template void LaunchSumIntoCuda<double>(int64_t, const double*, double*, cudaStream_t);
template void LaunchSumIntoCuda<int32_t>(int64_t, const int32_t*, int32_t*, cudaStream_t);
template void LaunchSumIntoCuda<int64_t>(int64_t, const int64_t*, int64_t*, cudaStream_t);
template void LaunchWeightedTermCuda<float, float>(int64_t, const functors::ScalarOperand<float>&,
                                                   const float*, bool, float*, cudaStream_t);
template void LaunchWeightedTermCuda<double, float>(int64_t,
                                                    const functors::ScalarOperand<float>&,
                                                    const double*, bool, double*, cudaStream_t);
template void LaunchWeightedTermCuda<double, double>(int64_t,
                                                     const functors::ScalarOperand<double>&,
                                                     const double*, bool, double*,
                                                     cudaStream_t);

}  // namespace doppio
