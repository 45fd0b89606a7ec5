// Launchers of the CUDA elementwise, loss, and fill kernels: raw
// pointers, sizes and a stream only, so the host-side ops
// (elementwise_op_gpu.cc, filler_op_gpu.cc) call them without nvcc and the
// .cu files need no core headers beyond enforce.h. Every launcher queues
// work on `stream` and throws doppio::Error if the launch fails; n == 0 is a
// no-op.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "operators/elementwise_functors.h"

namespace doppio {

enum class CudaUnaryKind { kRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kSqr, kNeg };
enum class CudaUnaryGradientKind { kRelu, kSigmoid, kTanh };
enum class CudaBinaryKind { kAdd, kSub, kMul, kDiv };

// y = f(x); y may alias x. float32 and float64, as the CPU ops.
void LaunchUnaryCuda(CudaUnaryKind kind, int64_t n, const float* x, float* y,
                     cudaStream_t stream);
void LaunchUnaryCuda(CudaUnaryKind kind, int64_t n, const double* x, double* y,
                     cudaStream_t stream);
// dx = f(y, dy) from the forward output y; dx may alias dy.
void LaunchUnaryGradientCuda(CudaUnaryGradientKind kind, int64_t n, const float* y,
                             const float* dy, float* dx, cudaStream_t stream);
void LaunchUnaryGradientCuda(CudaUnaryGradientKind kind, int64_t n, const double* y,
                             const double* dy, double* dx, cudaStream_t stream);
// c[i] = f(a[ia], b[ib]) with (ia, ib) from the mapper; n is c's size.
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper,
                      int64_t n, const float* a, const float* b, float* c, cudaStream_t stream);
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper,
                      int64_t n, const double* a, const double* b, double* c,
                      cudaStream_t stream);
// Integers: Add, Sub, Mul (Div's zero check needs the host).
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper, int64_t n,
                      const int32_t* a, const int32_t* b, int32_t* c, cudaStream_t stream);
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper, int64_t n,
                      const int64_t* a, const int64_t* b, int64_t* c, cudaStream_t stream);
// y[i] = -log(max(x[i * d + label[i]], 1e-20)) for rows i < rows; labels
// outside [0, d) write nan (the host checks them beforehand).
void LaunchLabelCrossEntropyCuda(int64_t rows, int64_t d, const float* x, const int32_t* label,
                                 float* y, cudaStream_t stream);
// dx = 0 except dx[i, label_i] = -dy[i] / max(x[i, label_i], 1e-20).
void LaunchLabelCrossEntropyGradientCuda(int64_t rows, int64_t d, const float* x,
                                         const int32_t* label, const float* dy, float* dx,
                                         cudaStream_t stream);

// ---- fills and random (filler_op_gpu.cu) ----

// y[i] = value; instantiated for float, double, int32 and int64.
template <typename T>
void LaunchConstantFillCuda(int64_t n, T value, T* y, cudaStream_t stream);
void LaunchUniformFillCuda(const functors::UniformFill& fill, int64_t n, float* y,
                           cudaStream_t stream);
void LaunchGaussianFillCuda(const functors::GaussianFill& fill, int64_t n, float* y,
                            cudaStream_t stream);
// y = keep(i) ? x * scale : 0 and mask = keep(i); y may alias x.
void LaunchDropoutCuda(const functors::DropoutKeep& keep, float scale, int64_t n, const float* x,
                       float* y, bool* mask, cudaStream_t stream);
void LaunchDropoutGradientCuda(float scale, int64_t n, const float* dy, const bool* mask,
                               float* dx, cudaStream_t stream);

}  // namespace doppio
