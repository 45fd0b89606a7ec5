// Reductions onto a broadcast input's shape. An input of the output's shape
// (nothing to reduce) is one grid-stride pass; otherwise each of its
// elements gets one block whose threads sum that element's parts
// (BlockSum, in double, like the CPU instantiation CpuReduceToShape).
#include "operators/elementwise_gradient_op_gpu.h"

#include "core/enforce.h"
#include "operators/cuda_launch_gpu.h"

namespace doppio {
namespace {

using cuda_launch::BlockSum;
using cuda_launch::BlocksFor;
using cuda_launch::CheckLaunch;
using cuda_launch::FirstIndex;
using cuda_launch::GridStride;
using cuda_launch::kMaxBlocks;
using cuda_launch::kThreads;

template <typename T, typename Part>
__global__ void CopyPartsKernel(functors::BroadcastReducer reducer, Part part, T* target) {
  for (int64_t t = FirstIndex(); t < reducer.target_count; t += GridStride()) {
    target[t] = part(reducer.OutIndex(t, 0));
  }
}

// Block-uniform loop over targets, so every thread of a block reaches the
// same BlockSum calls.
template <typename T, typename Part>
__global__ void ReducePartsKernel(functors::BroadcastReducer reducer, Part part, T* target) {
  for (int64_t t = blockIdx.x; t < reducer.target_count; t += gridDim.x) {
    double sum = 0;
    for (int64_t r = threadIdx.x; r < reducer.reduce_count; r += blockDim.x) {
      sum += static_cast<double>(part(reducer.OutIndex(t, r)));
    }
    const double total = BlockSum(sum);
    if (threadIdx.x == 0) target[t] = static_cast<T>(total);
  }
}

template <typename T, typename Part>
void ReduceToShape(const functors::BroadcastReducer& reducer, const Part& part, T* target,
                   cudaStream_t stream) {
  if (reducer.target_count == 0) return;
  if (reducer.reduce_count == 1) {
    CopyPartsKernel<<<BlocksFor(reducer.target_count), kThreads, 0, stream>>>(reducer, part,
                                                                             target);
    CheckLaunch("CopyPartsKernel");
    return;
  }
  const int64_t blocks = reducer.target_count < kMaxBlocks ? reducer.target_count : kMaxBlocks;
  ReducePartsKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(reducer, part,
                                                                             target);
  CheckLaunch("ReducePartsKernel");
}

template <typename F, typename T>
void Gradient(const functors::BroadcastIndexMapper& mapper,
              const functors::BroadcastReducer& reducer, int which, const T* dc, const T* a,
              const T* b, const T* c, T* target, cudaStream_t stream) {
  const functors::BinaryGradientPart<F, T> part{F{}, mapper, dc, a, b, c, which};
  ReduceToShape(reducer, part, target, stream);
}

}  // namespace

template <typename T>
void LaunchBinaryGradientCuda(CudaBinaryGradientKind kind,
                              const functors::BroadcastIndexMapper& mapper,
                              const functors::BroadcastReducer& reducer, int which, const T* dc,
                              const T* a, const T* b, const T* c, T* target,
                              cudaStream_t stream) {
  switch (kind) {
    case CudaBinaryGradientKind::kAdd:
      return Gradient<functors::AddGradient>(mapper, reducer, which, dc, a, b, c, target, stream);
    case CudaBinaryGradientKind::kSub:
      return Gradient<functors::SubGradient>(mapper, reducer, which, dc, a, b, c, target, stream);
    case CudaBinaryGradientKind::kMul:
      return Gradient<functors::MulGradient>(mapper, reducer, which, dc, a, b, c, target, stream);
    case CudaBinaryGradientKind::kDiv:
      return Gradient<functors::DivGradient>(mapper, reducer, which, dc, a, b, c, target, stream);
  }
}

template <typename T>
void LaunchSumReduceLikeCuda(const functors::BroadcastReducer& reducer, const T* a, T* c,
                             cudaStream_t stream) {
  ReduceToShape(reducer, functors::ValueAt<T>{a}, c, stream);
}

template void LaunchBinaryGradientCuda<float>(CudaBinaryGradientKind,
                                              const functors::BroadcastIndexMapper&,
                                              const functors::BroadcastReducer&, int,
                                              const float*, const float*, const float*,
                                              const float*, float*, cudaStream_t);
template void LaunchBinaryGradientCuda<double>(CudaBinaryGradientKind,
                                               const functors::BroadcastIndexMapper&,
                                               const functors::BroadcastReducer&, int,
                                               const double*, const double*, const double*,
                                               const double*, double*, cudaStream_t);
template void LaunchSumReduceLikeCuda<float>(const functors::BroadcastReducer&, const float*,
                                             float*, cudaStream_t);
template void LaunchSumReduceLikeCuda<double>(const functors::BroadcastReducer&, const double*,
                                              double*, cudaStream_t);

}  // namespace doppio
