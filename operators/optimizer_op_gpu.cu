// Optimizer and Accuracy kernels; the per-element math is the functors'
// (elementwise_functors.h) that the CPU ops run too.
#include "operators/optimizer_op_gpu.h"

#include "core/enforce.h"
#include "operators/cuda_launch_gpu.h"

namespace doppio {
namespace {

using cuda_launch::BlocksFor;
using cuda_launch::CheckLaunch;
using cuda_launch::FirstIndex;
using cuda_launch::GridStride;
using cuda_launch::kThreads;

__global__ void MomentumSgdKernel(int64_t n, const float* grad, const float* moment,
                                  functors::ScalarOperand<float> lr, float momentum,
                                  bool nesterov, float* new_grad, float* new_moment,
                                  float* param) {
  const double rate = lr.Get();
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    double m_new, step;
    functors::MomentumSgdStep(grad[i], moment[i], rate, momentum, nesterov, &m_new, &step);
    new_moment[i] = static_cast<float>(m_new);
    new_grad[i] = static_cast<float>(step);
    if (param != nullptr) param[i] = static_cast<float>(param[i] - step);
  }
}

__global__ void AdamKernel(int64_t n, functors::AdamStep adam, const float* param,
                           const float* moment_1, const float* moment_2, const float* grad,
                           functors::ScalarOperand<float> lr, float* new_param,
                           float* new_moment_1, float* new_moment_2, float* step_out) {
  const double rate = lr.Get();
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    double m, v;
    const double step = adam(grad[i], moment_1[i], moment_2[i], &m, &v);
    new_param[i] = static_cast<float>(param[i] + rate * step);
    new_moment_1[i] = static_cast<float>(m);
    new_moment_2[i] = static_cast<float>(v);
    if (step_out != nullptr) step_out[i] = static_cast<float>(step);
  }
}

// One block: each thread counts its rows, then a tree sum in shared memory.
// A label outside [0, d) makes the result nan (the labels live on the GPU;
// checking them on the host would stall the stream).
__global__ void AccuracyKernel(int64_t rows, int64_t d, int top_k, const float* scores,
                               const int32_t* labels, float* accuracy) {
  __shared__ int64_t correct[kThreads];
  __shared__ int bad_label;
  if (threadIdx.x == 0) bad_label = 0;
  __syncthreads();
  int64_t count = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const int32_t label = labels[r];
    if (label < 0 || label >= d) {
      bad_label = 1;
      continue;
    }
    count += functors::LabelInTopK(scores + r * d, d, static_cast<int64_t>(label),
                                   static_cast<int64_t>(top_k));
  }
  correct[threadIdx.x] = count;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) correct[threadIdx.x] += correct[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    *accuracy = bad_label ? nanf("")
                          : (rows > 0 ? static_cast<float>(correct[0]) / static_cast<float>(rows)
                                      : 0.0f);
  }
}

}  // namespace

void LaunchMomentumSgdCuda(int64_t n, const float* grad, const float* moment,
                           const functors::ScalarOperand<float>& lr, float momentum,
                           bool nesterov, float* new_grad, float* new_moment, float* param,
                           cudaStream_t stream) {
  if (n == 0) return;
  MomentumSgdKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, grad, moment, lr, momentum,
                                                           nesterov, new_grad, new_moment, param);
  CheckLaunch("MomentumSgdKernel");
}

void LaunchAdamCuda(int64_t n, const functors::AdamStep& adam, const float* param,
                    const float* moment_1, const float* moment_2, const float* grad,
                    const functors::ScalarOperand<float>& lr, float* new_param,
                    float* new_moment_1, float* new_moment_2, float* step_out,
                    cudaStream_t stream) {
  if (n == 0) return;
  AdamKernel<<<BlocksFor(n), kThreads, 0, stream>>>(n, adam, param, moment_1, moment_2, grad, lr,
                                                    new_param, new_moment_1, new_moment_2,
                                                    step_out);
  CheckLaunch("AdamKernel");
}

void LaunchAccuracyCuda(int64_t rows, int64_t d, int top_k, const float* scores,
                        const int32_t* labels, float* accuracy, cudaStream_t stream) {
  AccuracyKernel<<<1, kThreads, 0, stream>>>(rows, d, top_k, scores, labels, accuracy);
  CheckLaunch("AccuracyKernel");
}

}  // namespace doppio
