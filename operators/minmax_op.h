// Max and Min of any number of same-shaped tensors, and their gradients
// MaxGradient / MinGradient (inputs Y, dY, X0, X1, ...; every input equal
// to Y at an element gets dY there, ties included, as in Caffe2).
#pragma once

#include "core/operator.h"

namespace doppio {

// Picks the winner of two values; nan wins, as numpy.maximum/minimum. A
// float16 compares as the float it stands for and the winner keeps its bits.
struct MaxSelect {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
  float16 operator()(float16 a, float16 b) const {
    const float fa = HalfToFloat(a), fb = HalfToFloat(b);
    return (fa > fb || fa != fa) ? a : b;
  }
};
struct MinSelect {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
  float16 operator()(float16 a, float16 b) const {
    const float fa = HalfToFloat(a), fb = HalfToFloat(b);
    return (fa < fb || fa != fa) ? a : b;
  }
};

template <class Select>
class MinMaxOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class SelectGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
