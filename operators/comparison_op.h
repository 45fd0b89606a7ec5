// Functors of the comparison ops (EQ, NE, LT, LE, GT, GE: numeric or bool
// inputs, bool output) and the logical ops (And, Or, Xor, Not: bool only),
// run by the broadcasting templates of elementwise_binary_op.h and
// elementwise_unary_op.h.
#pragma once

#include <cstdint>

#include "operators/elementwise_binary_op.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

// Caffe2 compares bool, int32, int64, float32 and float64 tensors.
using ComparableTypes = TypeList<bool, int32_t, int64_t, float, double>;

template <class Compare>
struct ComparisonFunctor : BinaryFunctorBase {
  using Types = ComparableTypes;
  template <typename T>
  using Output = bool;
  template <typename T>
  bool operator()(T a, T b) const {
    return Compare()(a, b);
  }
};

template <class Combine>
struct LogicalFunctor : BinaryFunctorBase {
  using Types = BoolTypes;
  bool operator()(bool a, bool b) const {
    return Combine()(a, b);
  }
};

struct NotFunctor {
  using Types = BoolTypes;
  explicit NotFunctor(const OperatorBase&) {}
  bool operator()(bool x) const {
    return !x;
  }
};

}  // namespace doppio
