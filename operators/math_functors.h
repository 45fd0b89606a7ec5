// The math of Scale, Sum and WeightedSum, and the one-element operands
// (learning rates, weights) that update ops read, written once for the host
// (g++) and the device (nvcc). The CPU ops call these through plain loops,
// the CUDA ops through the grid-stride kernels of math_op_gpu.cu.
//
// Plain C++ only (no core headers), so nvcc can include it without the
// generated proto header.
#pragma once

#include <cstdint>

#include "operators/elementwise_functors.h"

namespace doppio {
namespace functors {

// A one-element operand that may live on either side: the learning rate a
// CPU LearningRate op writes (shared by every device of a data-parallel
// model) is read on the host and passed by value; one already on the GPU is
// read by the kernel, so the host never waits for it.
template <typename T>
struct ScalarOperand {
  const T* device_value = nullptr;  // read by the kernel when set
  T host_value = T(0);

  DOPPIO_HOST_DEVICE T Get() const { return device_value != nullptr ? *device_value : host_value; }
};

// Scale: y = scale * x, with the float argument cast to T first (Caffe2's
// order of rounding).
struct Scale {
  float scale;
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T x) const {
    return static_cast<T>(scale) * x;
  }
};

// One term of WeightedSum: y = w * x for the first pair, y + w * x after.
struct WeightedTerm {
  template <typename T>
  DOPPIO_HOST_DEVICE T First(T w, T x) const {
    return w * x;
  }
  template <typename T>
  DOPPIO_HOST_DEVICE T Accumulate(T y, T w, T x) const {
    return y + w * x;
  }
};

// One input of Sum added to the running total.
struct SumTerm {
  template <typename T>
  DOPPIO_HOST_DEVICE T operator()(T total, T x) const {
    return static_cast<T>(total + x);
  }
};

// ---- CPU launchers: the host instantiation of the same functors ----

// y = w * x (accumulate false) or y += w * x over n elements; w of type W
// (float32 weights on double data) is converted to T first.
template <typename T, typename W>
void CpuWeightedTerm(int64_t n, const ScalarOperand<W>& w, const T* x, bool accumulate, T* y) {
  const T weight = static_cast<T>(w.Get());
  const WeightedTerm term;
  for (int64_t i = 0; i < n; ++i) y[i] = accumulate ? term.Accumulate(y[i], weight, x[i])
                                                    : term.First(weight, x[i]);
}

// total += x over n elements.
template <typename T>
void CpuSumInto(int64_t n, const T* x, T* total) {
  const SumTerm add;
  for (int64_t i = 0; i < n; ++i) total[i] = add(total[i], x[i]);
}

}  // namespace functors
}  // namespace doppio
