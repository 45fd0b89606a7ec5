// Launchers of the CUDA kernels of the sparse-gradient ops (sparse_op_gpu.cu):
// Gather, SparseMomentumSGDUpdate and SparseAdagrad, and of dense Adagrad,
// which shares SparseAdagrad's functor (an Adagrad optimizer updates the
// dense parameters of a model with sparse ones). Raw pointers, sizes and a
// stream only; the ops (gather_op_gpu.cc, sparse_optimizer_op_gpu.cc) check
// shapes and indices on the host first.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "operators/math_functors.h"
#include "operators/sparse_functors.h"

namespace doppio {

// output[k, :] = data[index[k], :] for k < count, rows of row_size elements
// of `itemsize` bytes (1, 2, 4 or 8: the copy does not look at the dtype).
template <typename Index>
void LaunchGatherCuda(size_t itemsize, int64_t count, int64_t row_size, int64_t rows,
                      const void* data, const Index* index, void* output, cudaStream_t stream);

// The rows index[0..count) of moment and param, in place, in index order;
// `steps` (count rows, may alias grad, may be null) gets each element's step.
template <typename T, typename Index>
void LaunchSparseMomentumSgdCuda(const functors::SparseMomentumSgdElement& element,
                                 int64_t count, int64_t row_size, int64_t rows,
                                 const Index* index, const T* grad,
                                 const functors::ScalarOperand<float>& lr, T* moment, T* param,
                                 T* steps, cudaStream_t stream);

template <typename T, typename Index>
void LaunchSparseAdagradCuda(const functors::SparseAdagradElement& element, int64_t count,
                             int64_t row_size, int64_t rows, const Index* index, const T* grad,
                             const functors::ScalarOperand<float>& lr, T* moment, T* param,
                             cudaStream_t stream);

// Dense Adagrad over n elements; outputs may alias their inputs;
// effective_lr and update may be null.
template <typename T>
void LaunchAdagradCuda(const functors::AdagradStep& adagrad, int64_t n, const T* param,
                       const T* moment, const T* grad, const functors::ScalarOperand<float>& lr,
                       T* new_param, T* new_moment, T* effective_lr, T* update,
                       cudaStream_t stream);

}  // namespace doppio
