// Launchers of the CUDA optimizer kernels (optimizer_op_gpu.cu): raw
// pointers, sizes and a stream only. The learning rate is a ScalarOperand:
// a value read on the host from a CPU tensor (the shared output of a CPU
// LearningRate op), or a one-element device tensor the kernel reads, so the
// host never waits for it. Outputs may alias their inputs (each element is
// read before it is written).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "operators/elementwise_functors.h"
#include "operators/math_functors.h"

namespace doppio {

// MomentumSGD(Update): step and new moment from (grad, moment, lr); with
// param non-null also param -= step.
void LaunchMomentumSgdCuda(int64_t n, const float* grad, const float* moment,
                           const functors::ScalarOperand<float>& lr, float momentum,
                           bool nesterov, float* new_grad, float* new_moment, float* param,
                           cudaStream_t stream);

// Dense Adam: param + lr * step and the new moments; step_out may be null.
void LaunchAdamCuda(int64_t n, const functors::AdamStep& adam, const float* param,
                    const float* moment_1, const float* moment_2, const float* grad,
                    const functors::ScalarOperand<float>& lr, float* new_param,
                    float* new_moment_1, float* new_moment_2, float* step_out,
                    cudaStream_t stream);

// Accuracy: the fraction of rows whose label has one of the top_k scores
// (ties counted as Caffe2 does: a strictly greater score, or an equal score
// at a lower index, ranks ahead). Writes the one-element result on device.
void LaunchAccuracyCuda(int64_t rows, int64_t d, int top_k, const float* scores,
                        const int32_t* labels, float* accuracy, cudaStream_t stream);

}  // namespace doppio
