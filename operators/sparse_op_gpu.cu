// Sparse-gradient kernels; the per-element math is sparse_functors.h's,
// which the CPU ops run too.
#include "operators/sparse_op_gpu.h"

#include "core/enforce.h"
#include "operators/cuda_launch_gpu.h"

namespace doppio {
namespace {

using cuda_launch::BlocksFor;
using cuda_launch::CheckLaunch;
using cuda_launch::FirstIndex;
using cuda_launch::GridStride;
using cuda_launch::kThreads;

// Word: an unsigned integer of the element's size, so one kernel copies
// every dtype. An index out of range (rejected by the op before launching)
// reads nothing and writes zeros.
template <typename Word, typename Index>
__global__ void GatherKernel(int64_t n, int64_t row_size, int64_t rows, const Word* data,
                             const Index* index, Word* output) {
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    const int64_t source = functors::GatherSource(i, row_size, rows, index);
    output[i] = source < 0 ? Word(0) : data[source];
  }
}

// One thread per column: the rows go in index order within a column, so
// repeated indices apply one after the other as on the CPU.
template <typename Element, typename T, typename Index>
__global__ void SparseUpdateKernel(Element element, int64_t count, int64_t row_size,
                                   int64_t rows, const Index* index, const T* grad,
                                   functors::ScalarOperand<float> lr, T* moment, T* param,
                                   T* steps) {
  const double rate = lr.Get();
  for (int64_t column = FirstIndex(); column < row_size; column += GridStride()) {
    functors::SparseUpdateColumn(element, column, count, row_size, rows, index, grad, rate,
                                 moment, param, steps);
  }
}

template <typename T>
__global__ void AdagradKernel(functors::AdagradStep adagrad, int64_t n, const T* param,
                              const T* moment, const T* grad, functors::ScalarOperand<float> lr,
                              T* new_param, T* new_moment, T* effective_lr, T* update) {
  const double rate = lr.Get();
  for (int64_t i = FirstIndex(); i < n; i += GridStride()) {
    double m, effective;
    const double step = adagrad(grad[i], moment[i], rate, &m, &effective);
    new_param[i] = static_cast<T>(param[i] + step);
    new_moment[i] = static_cast<T>(m);
    if (effective_lr != nullptr) effective_lr[i] = static_cast<T>(effective);
    if (update != nullptr) update[i] = static_cast<T>(step);
  }
}

template <typename Word, typename Index>
void LaunchGatherWords(int64_t n, int64_t row_size, int64_t rows, const void* data,
                       const Index* index, void* output, cudaStream_t stream) {
  GatherKernel<Word, Index><<<BlocksFor(n), kThreads, 0, stream>>>(
      n, row_size, rows, static_cast<const Word*>(data), index, static_cast<Word*>(output));
  CheckLaunch("GatherKernel");
}

}  // namespace

template <typename Index>
void LaunchGatherCuda(size_t itemsize, int64_t count, int64_t row_size, int64_t rows,
                      const void* data, const Index* index, void* output, cudaStream_t stream) {
  const int64_t n = count * row_size;
  if (n == 0) return;
  switch (itemsize) {
    case 1: return LaunchGatherWords<uint8_t>(n, row_size, rows, data, index, output, stream);
    case 2: return LaunchGatherWords<uint16_t>(n, row_size, rows, data, index, output, stream);
    case 4: return LaunchGatherWords<uint32_t>(n, row_size, rows, data, index, output, stream);
    case 8: return LaunchGatherWords<uint64_t>(n, row_size, rows, data, index, output, stream);
    default: break;
  }
  DOPPIO_THROW("Gather on CUDA: elements of ", itemsize,
               " bytes are not supported (1, 2, 4 or 8)");
}

template <typename T, typename Index>
void LaunchSparseMomentumSgdCuda(const functors::SparseMomentumSgdElement& element,
                                 int64_t count, int64_t row_size, int64_t rows,
                                 const Index* index, const T* grad,
                                 const functors::ScalarOperand<float>& lr, T* moment, T* param,
                                 T* steps, cudaStream_t stream) {
  if (count == 0 || row_size == 0) return;
  SparseUpdateKernel<<<BlocksFor(row_size), kThreads, 0, stream>>>(
      element, count, row_size, rows, index, grad, lr, moment, param, steps);
  CheckLaunch("SparseUpdateKernel (SparseMomentumSGDUpdate)");
}

template <typename T, typename Index>
void LaunchSparseAdagradCuda(const functors::SparseAdagradElement& element, int64_t count,
                             int64_t row_size, int64_t rows, const Index* index, const T* grad,
                             const functors::ScalarOperand<float>& lr, T* moment, T* param,
                             cudaStream_t stream) {
  if (count == 0 || row_size == 0) return;
  SparseUpdateKernel<<<BlocksFor(row_size), kThreads, 0, stream>>>(
      element, count, row_size, rows, index, grad, lr, moment, param, static_cast<T*>(nullptr));
  CheckLaunch("SparseUpdateKernel (SparseAdagrad)");
}

template <typename T>
void LaunchAdagradCuda(const functors::AdagradStep& adagrad, int64_t n, const T* param,
                       const T* moment, const T* grad, const functors::ScalarOperand<float>& lr,
                       T* new_param, T* new_moment, T* effective_lr, T* update,
                       cudaStream_t stream) {
  if (n == 0) return;
  AdagradKernel<<<BlocksFor(n), kThreads, 0, stream>>>(adagrad, n, param, moment, grad, lr,
                                                       new_param, new_moment, effective_lr,
                                                       update);
  CheckLaunch("AdagradKernel");
}

template void LaunchAdagradCuda<float>(const functors::AdagradStep&, int64_t, const float*,
                                       const float*, const float*,
                                       const functors::ScalarOperand<float>&, float*, float*,
                                       float*, float*, cudaStream_t);
template void LaunchAdagradCuda<double>(const functors::AdagradStep&, int64_t, const double*,
                                        const double*, const double*,
                                        const functors::ScalarOperand<float>&, double*, double*,
                                        double*, double*, cudaStream_t);

#define DOPPIO_SPARSE_INSTANTIATE(T, Index)                                                  \
  template void LaunchSparseMomentumSgdCuda<T, Index>(                                      \
      const functors::SparseMomentumSgdElement&, int64_t, int64_t, int64_t, const Index*,  \
      const T*, const functors::ScalarOperand<float>&, T*, T*, T*, cudaStream_t);           \
  template void LaunchSparseAdagradCuda<T, Index>(                                          \
      const functors::SparseAdagradElement&, int64_t, int64_t, int64_t, const Index*,      \
      const T*, const functors::ScalarOperand<float>&, T*, T*, cudaStream_t);
DOPPIO_SPARSE_INSTANTIATE(float, int32_t)
DOPPIO_SPARSE_INSTANTIATE(float, int64_t)
DOPPIO_SPARSE_INSTANTIATE(double, int32_t)
DOPPIO_SPARSE_INSTANTIATE(double, int64_t)
#undef DOPPIO_SPARSE_INSTANTIATE

template void LaunchGatherCuda<int32_t>(size_t, int64_t, int64_t, int64_t, const void*,
                                        const int32_t*, void*, cudaStream_t);
template void LaunchGatherCuda<int64_t>(size_t, int64_t, int64_t, int64_t, const void*,
                                        const int64_t*, void*, cudaStream_t);

}  // namespace doppio
