// SoftmaxWithLoss and AveragedLoss kernels. Per-sample (or per-element) work
// is a grid-stride loop over the functors of loss_functors.h; the sums over
// samples are one block's BlockSum in double, as the CPU op sums in double.
#include "operators/loss_op_gpu.h"

#include "core/enforce.h"
#include "operators/cuda_launch_gpu.h"

namespace doppio {
namespace {

using cuda_launch::BlockSum;
using cuda_launch::BlocksFor;
using cuda_launch::CheckLaunch;
using cuda_launch::FirstIndex;
using cuda_launch::GridStride;
using cuda_launch::kThreads;

// Each sample's softmax into p, and its weighted loss and weight into
// scratch[sample] and scratch[samples + sample].
template <typename T, typename L>
__global__ void SoftmaxLossSamplesKernel(functors::SoftmaxLossTargets<T, L> targets, const T* x,
                                         T* p, double* scratch) {
  const int64_t samples = targets.layout.samples();
  for (int64_t sample = FirstIndex(); sample < samples; sample += GridStride()) {
    const functors::SampleLoss part = functors::SoftmaxLossOfSample(targets, x, sample, p);
    scratch[sample] = part.weighted_loss;
    scratch[samples + sample] = part.weight;
  }
}

// One block: the two sums, then the loss.
template <typename T>
__global__ void SoftmaxLossTotalKernel(int64_t samples, const double* scratch, double scale,
                                       T* loss) {
  double loss_part = 0, weight_part = 0;
  for (int64_t i = threadIdx.x; i < samples; i += blockDim.x) {
    loss_part += scratch[i];
    weight_part += scratch[samples + i];
  }
  const double loss_sum = BlockSum(loss_part);
  const double weight_sum = BlockSum(weight_part);
  if (threadIdx.x == 0) {
    *loss = static_cast<T>(functors::SoftmaxLossValue(loss_sum, weight_sum, scale));
  }
}

template <typename T, typename L>
__global__ void CountedWeightsKernel(functors::SoftmaxLossTargets<T, L> targets,
                                     double* scratch) {
  const int64_t samples = targets.layout.samples();
  for (int64_t sample = FirstIndex(); sample < samples; sample += GridStride()) {
    scratch[sample] = functors::CountedWeight(targets, sample);
  }
}

// One block: scratch[samples] = scale * d_loss / sum of the counted weights.
template <typename T>
__global__ void GradientCoefficientKernel(int64_t samples, double scale, const T* d_loss,
                                          double* scratch) {
  double part = 0;
  for (int64_t i = threadIdx.x; i < samples; i += blockDim.x) part += scratch[i];
  const double weight_sum = BlockSum(part);
  if (threadIdx.x == 0) {
    scratch[samples] = functors::SoftmaxLossGradientCoefficient(
        scale, static_cast<double>(*d_loss), weight_sum);
  }
}

template <typename T, typename L>
__global__ void SoftmaxLossGradientKernel(functors::SoftmaxLossTargets<T, L> targets, const T* p,
                                          const double* coefficient, T* dx) {
  const int64_t count = targets.layout.samples() * targets.layout.classes;
  const double factor = *coefficient;
  for (int64_t i = FirstIndex(); i < count; i += GridStride()) {
    dx[i] = functors::SoftmaxLossGradientAt(targets, p, i, factor);
  }
}

template <typename T>
__global__ void AveragedLossKernel(int64_t n, const T* x, T* y) {
  double part = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) part += static_cast<double>(x[i]);
  const double sum = BlockSum(part);
  if (threadIdx.x == 0) *y = static_cast<T>(functors::AverageOf(sum, n));
}

template <typename T>
__global__ void AveragedLossGradientKernel(int64_t n, const T* dy, T* dx) {
  const T value = functors::AveragedLossGradientValue(*dy, n);
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) dx[i] = value;
}

}  // namespace

template <typename T, typename L>
void LaunchSoftmaxLossCuda(const functors::SoftmaxLossTargets<T, L>& targets, const T* x,
                           double scale, T* p, double* scratch, T* loss, cudaStream_t stream) {
  const int64_t samples = targets.layout.samples();
  if (samples > 0) {
    SoftmaxLossSamplesKernel<<<BlocksFor(samples), kThreads, 0, stream>>>(targets, x, p,
                                                                           scratch);
    CheckLaunch("SoftmaxLossSamplesKernel");
  }
  SoftmaxLossTotalKernel<<<1, kThreads, 0, stream>>>(samples, scratch, scale, loss);
  CheckLaunch("SoftmaxLossTotalKernel");
}

template <typename T, typename L>
void LaunchSoftmaxLossGradientCuda(const functors::SoftmaxLossTargets<T, L>& targets, const T* p,
                                   double scale, const T* d_loss, double* scratch, T* dx,
                                   cudaStream_t stream) {
  const int64_t samples = targets.layout.samples();
  const int64_t count = samples * targets.layout.classes;
  if (count == 0) return;
  CountedWeightsKernel<<<BlocksFor(samples), kThreads, 0, stream>>>(targets, scratch);
  CheckLaunch("CountedWeightsKernel");
  GradientCoefficientKernel<<<1, kThreads, 0, stream>>>(samples, scale, d_loss, scratch);
  CheckLaunch("GradientCoefficientKernel");
  SoftmaxLossGradientKernel<<<BlocksFor(count), kThreads, 0, stream>>>(targets, p,
                                                                       scratch + samples, dx);
  CheckLaunch("SoftmaxLossGradientKernel");
}

template <typename T>
void LaunchAveragedLossCuda(int64_t n, const T* x, T* y, cudaStream_t stream) {
  AveragedLossKernel<<<1, kThreads, 0, stream>>>(n, x, y);
  CheckLaunch("AveragedLossKernel");
}

template <typename T>
void LaunchAveragedLossGradientCuda(int64_t n, const T* dy, T* dx, cudaStream_t stream) {
  if (n == 0) return;
  AveragedLossGradientKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, dy, dx);
  CheckLaunch("AveragedLossGradientKernel");
}

#define DOPPIO_INSTANTIATE_SOFTMAX_LOSS_(T, L)                                              \
  template void LaunchSoftmaxLossCuda<T, L>(const functors::SoftmaxLossTargets<T, L>&,    \
                                            const T*, double, T*, double*, T*,            \
                                            cudaStream_t);                                \
  template void LaunchSoftmaxLossGradientCuda<T, L>(                                      \
      const functors::SoftmaxLossTargets<T, L>&, const T*, double, const T*, double*, T*, \
      cudaStream_t)
DOPPIO_INSTANTIATE_SOFTMAX_LOSS_(float, int32_t);
DOPPIO_INSTANTIATE_SOFTMAX_LOSS_(float, int64_t);
DOPPIO_INSTANTIATE_SOFTMAX_LOSS_(double, int32_t);
DOPPIO_INSTANTIATE_SOFTMAX_LOSS_(double, int64_t);
#undef DOPPIO_INSTANTIATE_SOFTMAX_LOSS_

template void LaunchAveragedLossCuda<float>(int64_t, const float*, float*, cudaStream_t);
template void LaunchAveragedLossCuda<double>(int64_t, const double*, double*, cudaStream_t);
template void LaunchAveragedLossGradientCuda<float>(int64_t, const float*, float*, cudaStream_t);
template void LaunchAveragedLossGradientCuda<double>(int64_t, const double*, double*,
                                                     cudaStream_t);

}  // namespace doppio
