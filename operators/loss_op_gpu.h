// Launchers of the CUDA loss kernels (loss_op_gpu.cu): SoftmaxWithLoss,
// AveragedLoss and their gradients, running the functors of loss_functors.h
// that the CPU ops run too. Raw pointers, sizes and a stream only, so the
// host-side ops (loss_op_gpu.cc) call them without nvcc. Every launcher
// queues work on `stream` and throws doppio::Error if a launch fails.
//
// Instantiated for T = float, double and L = int32_t, int64_t (with
// label_prob, L is int32_t and the labels pointer null).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "operators/loss_functors.h"

namespace doppio {

// p = softmax of every sample and *loss = scale * weighted mean cross
// entropy (a device scalar). `scratch` holds 2 * samples doubles.
template <typename T, typename L>
void LaunchSoftmaxLossCuda(const functors::SoftmaxLossTargets<T, L>& targets, const T* x,
                           double scale, T* p, double* scratch, T* loss, cudaStream_t stream);

// dx from the forward softmax p and the device scalar d_loss. `scratch`
// holds samples + 1 doubles.
template <typename T, typename L>
void LaunchSoftmaxLossGradientCuda(const functors::SoftmaxLossTargets<T, L>& targets, const T* p,
                                   double scale, const T* d_loss, double* scratch, T* dx,
                                   cudaStream_t stream);

// *y = mean of x[0..n) (0 for n == 0), a device scalar.
template <typename T>
void LaunchAveragedLossCuda(int64_t n, const T* x, T* y, cudaStream_t stream);

// dx[i] = *dy / n for i < n.
template <typename T>
void LaunchAveragedLossGradientCuda(int64_t n, const T* dy, T* dx, cudaStream_t stream);

}  // namespace doppio
