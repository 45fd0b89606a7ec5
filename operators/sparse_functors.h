// The math of the sparse (row-indexed) optimizer updates and of Gather, as
// functors that compile for the host (g++) and the device (nvcc): the CPU
// ops and the CUDA kernels (sparse_op_gpu.cu) run the same expressions.
//
// Plain C++ only, like elementwise_functors.h: no core headers, so nvcc can
// include it without the generated proto header.
#pragma once

#include <cmath>
#include <cstdint>

#include "operators/elementwise_functors.h"

namespace doppio {
namespace functors {

// Caffe2's AdaGrad for one element, in double on both devices:
//   moment' = decay * moment + g^2
//   effective_lr = lr / (sqrt(moment') + epsilon);  update = effective_lr * g
// The caller applies param' = param + update (lr negative for descent).
struct AdagradStep {
  double epsilon;
  double decay;

  // Returns the update; sets the new moment and the effective rate.
  DOPPIO_HOST_DEVICE double operator()(double grad, double moment, double lr,
                                       double* new_moment, double* effective_lr) const {
    *new_moment = decay * moment + grad * grad;
    *effective_lr = lr / (std::sqrt(*new_moment) + epsilon);
    return *effective_lr * grad;
  }
};

// One element of SparseMomentumSGDUpdate: moment and param updated in place,
// the step returned (the op's output_grad).
struct SparseMomentumSgdElement {
  double momentum;
  bool nesterov;

  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T grad, double lr, T* moment, T* param) const {
    double new_moment, step;
    MomentumSgdStep(grad, *moment, lr, momentum, nesterov, &new_moment, &step);
    *moment = static_cast<T>(new_moment);
    *param = static_cast<T>(*param - step);
    return static_cast<T>(step);
  }
};

// One element of SparseAdagrad (decay 1): moment and param in place; returns
// the applied update.
struct SparseAdagradElement {
  double epsilon;

  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T grad, double lr, T* moment, T* param) const {
    double new_moment, effective_lr;
    const double update = AdagradStep{epsilon, 1.0}(grad, *moment, lr, &new_moment,
                                                     &effective_lr);
    *moment = static_cast<T>(new_moment);
    *param = static_cast<T>(*param + update);
    return static_cast<T>(update);
  }
};

// Column `column` of a sparse update: rows index[0..count) of moment and
// param (row_size elements each, `rows` rows), in the order given, so a
// repeated index sees the earlier update, as on the CPU. Columns are
// independent, which is what the CUDA kernel parallelizes over. An index
// outside [0, rows) is skipped (the ops reject such indices before running;
// this only keeps a kernel from writing out of bounds) and its step, when
// asked for, is nan. `steps` may be null.
template <typename Element, typename T, typename Index>
DOPPIO_HOST_DEVICE void SparseUpdateColumn(const Element& element, int64_t column, int64_t count,
                                           int64_t row_size, int64_t rows, const Index* index,
                                           const T* grad, double lr, T* moment, T* param,
                                           T* steps) {
  for (int64_t k = 0; k < count; ++k) {
    const int64_t row = static_cast<int64_t>(index[k]);
    const int64_t at = k * row_size + column;
    if (row < 0 || row >= rows) {
      if (steps != nullptr) steps[at] = static_cast<T>(NAN);
      continue;
    }
    const int64_t offset = row * row_size + column;
    const T step = element(grad[at], lr, moment + offset, param + offset);
    if (steps != nullptr) steps[at] = step;
  }
}

// Where element `i` of Gather's output comes from: row index[i / row_size],
// column i % row_size of the data; -1 for an index outside [0, rows) (the
// op rejects those first; the kernel then writes a fill value instead of
// reading out of bounds).
template <typename Index>
DOPPIO_HOST_DEVICE int64_t GatherSource(int64_t i, int64_t row_size, int64_t rows,
                                        const Index* index) {
  const int64_t row = static_cast<int64_t>(index[i / row_size]);
  if (row < 0 || row >= rows) return -1;
  return row * row_size + i % row_size;
}

}  // namespace functors
}  // namespace doppio
