// Grid-stride kernels instantiating the functors of elementwise_functors.h
// on the device: the CPU ops run the same functors through plain loops.
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

template <typename F, typename T>
__global__ void UnaryKernel(F f, int64_t n, const T* x, T* y) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) y[i] = f(x[i]);
}

template <typename F, typename T>
__global__ void UnaryGradientKernel(F f, int64_t n, const T* y, const T* dy, T* dx) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) dx[i] = f(y[i], dy[i]);
}

template <typename F, typename T>
__global__ void BinaryKernel(F f, functors::BroadcastIndexMapper mapper, int64_t n, const T* a,
                             const T* b, T* c) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    int64_t ia, ib;
    mapper.Map(i, &ia, &ib);
    c[i] = f(a[ia], b[ib]);
  }
}

__global__ void LabelCrossEntropyKernel(int64_t rows, int64_t d, const float* x,
                                        const int32_t* label, float* y) {
  for (int64_t i = FirstIndex(); i < rows; i += GridStride()) {
    const int32_t l = label[i];
    y[i] = (l >= 0 && l < d) ? functors::LabelCrossEntropy{}(x[i * d + l]) : nanf("");
  }
}

__global__ void LabelCrossEntropyGradientKernel(int64_t rows, int64_t d, const float* x,
                                                const int32_t* label, const float* dy,
                                                float* dx) {
  for (int64_t k = FirstIndex(); k < rows * d; k += GridStride()) {
    const int64_t i = k / d, j = k % d;
    dx[k] = (j == label[i]) ? functors::LabelCrossEntropyGradient{}(x[k], dy[i]) : 0.0f;
  }
}

template <typename F, typename T>
void Unary(F f, int64_t n, const T* x, T* y, cudaStream_t stream) {
  UnaryKernel<<<BlocksFor(n), kThreads, 0, stream>>>(f, n, x, y);
}

template <typename F, typename T>
void UnaryGradient(F f, int64_t n, const T* y, const T* dy, T* dx, cudaStream_t stream) {
  UnaryGradientKernel<<<BlocksFor(n), kThreads, 0, stream>>>(f, n, y, dy, dx);
}

template <typename F, typename T>
void Binary(F f, const functors::BroadcastIndexMapper& mapper, int64_t n, const T* a, const T* b,
            T* c, cudaStream_t stream) {
  BinaryKernel<<<BlocksFor(n), kThreads, 0, stream>>>(f, mapper, n, a, b, c);
}

template <typename T>
void UnaryOf(CudaUnaryKind kind, int64_t n, const T* x, T* y, cudaStream_t stream) {
  if (n == 0) return;
  switch (kind) {
    case CudaUnaryKind::kRelu: Unary(functors::Relu{}, n, x, y, stream); break;
    case CudaUnaryKind::kSigmoid: Unary(functors::Sigmoid{}, n, x, y, stream); break;
    case CudaUnaryKind::kTanh: Unary(functors::Tanh{}, n, x, y, stream); break;
    case CudaUnaryKind::kExp: Unary(functors::Exp{}, n, x, y, stream); break;
    case CudaUnaryKind::kLog: Unary(functors::Log{}, n, x, y, stream); break;
    case CudaUnaryKind::kSqrt: Unary(functors::Sqrt{}, n, x, y, stream); break;
    case CudaUnaryKind::kSqr: Unary(functors::Sqr{}, n, x, y, stream); break;
    case CudaUnaryKind::kNeg: Unary(functors::Neg{}, n, x, y, stream); break;
  }
  CheckLaunch("UnaryKernel");
}

template <typename T>
void UnaryGradientOf(CudaUnaryGradientKind kind, int64_t n, const T* y, const T* dy, T* dx,
                     cudaStream_t stream) {
  if (n == 0) return;
  switch (kind) {
    case CudaUnaryGradientKind::kRelu:
      UnaryGradient(functors::ReluGradient{}, n, y, dy, dx, stream);
      break;
    case CudaUnaryGradientKind::kSigmoid:
      UnaryGradient(functors::SigmoidGradient{}, n, y, dy, dx, stream);
      break;
    case CudaUnaryGradientKind::kTanh:
      UnaryGradient(functors::TanhGradient{}, n, y, dy, dx, stream);
      break;
  }
  CheckLaunch("UnaryGradientKernel");
}

template <typename T>
void BinaryOf(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper, int64_t n,
              const T* a, const T* b, T* c, cudaStream_t stream) {
  if (n == 0) return;
  switch (kind) {
    case CudaBinaryKind::kAdd: Binary(functors::Add{}, mapper, n, a, b, c, stream); break;
    case CudaBinaryKind::kSub: Binary(functors::Sub{}, mapper, n, a, b, c, stream); break;
    case CudaBinaryKind::kMul: Binary(functors::Mul{}, mapper, n, a, b, c, stream); break;
    case CudaBinaryKind::kDiv: Binary(functors::Div{}, mapper, n, a, b, c, stream); break;
  }
  CheckLaunch("BinaryKernel");
}

}  // namespace

void LaunchUnaryCuda(CudaUnaryKind kind, int64_t n, const float* x, float* y,
                     cudaStream_t stream) {
  UnaryOf(kind, n, x, y, stream);
}
void LaunchUnaryCuda(CudaUnaryKind kind, int64_t n, const double* x, double* y,
                     cudaStream_t stream) {
  UnaryOf(kind, n, x, y, stream);
}

void LaunchUnaryGradientCuda(CudaUnaryGradientKind kind, int64_t n, const float* y,
                             const float* dy, float* dx, cudaStream_t stream) {
  UnaryGradientOf(kind, n, y, dy, dx, stream);
}
void LaunchUnaryGradientCuda(CudaUnaryGradientKind kind, int64_t n, const double* y,
                             const double* dy, double* dx, cudaStream_t stream) {
  UnaryGradientOf(kind, n, y, dy, dx, stream);
}

void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper,
                      int64_t n, const float* a, const float* b, float* c, cudaStream_t stream) {
  BinaryOf(kind, mapper, n, a, b, c, stream);
}
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper,
                      int64_t n, const double* a, const double* b, double* c,
                      cudaStream_t stream) {
  BinaryOf(kind, mapper, n, a, b, c, stream);
}
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper, int64_t n,
                      const int32_t* a, const int32_t* b, int32_t* c, cudaStream_t stream) {
  BinaryOf(kind, mapper, n, a, b, c, stream);
}
void LaunchBinaryCuda(CudaBinaryKind kind, const functors::BroadcastIndexMapper& mapper, int64_t n,
                      const int64_t* a, const int64_t* b, int64_t* c, cudaStream_t stream) {
  BinaryOf(kind, mapper, n, a, b, c, stream);
}

void LaunchLabelCrossEntropyCuda(int64_t rows, int64_t d, const float* x, const int32_t* label,
                                 float* y, cudaStream_t stream) {
  if (rows == 0) return;
  LabelCrossEntropyKernel<<<BlocksFor(rows), kThreads, 0, stream>>>(rows, d, x, label, y);
  CheckLaunch("LabelCrossEntropyKernel");
}

void LaunchLabelCrossEntropyGradientCuda(int64_t rows, int64_t d, const float* x,
                                         const int32_t* label, const float* dy, float* dx,
                                         cudaStream_t stream) {
  if (rows * d == 0) return;
  LabelCrossEntropyGradientKernel<<<BlocksFor(rows * d), kThreads, 0, stream>>>(rows, d, x,
                                                                               label, dy, dx);
  CheckLaunch("LabelCrossEntropyGradientKernel");
}

}  // namespace doppio
