// Input checks shared by the optimizer ops (Adam, Adagrad, RmsProp, the
// momentum SGD family, LearningRate).
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

// Input `input` of `op`: a one-element float32 or float64 tensor, read as
// double (so LearningRate's float32 output can drive a float64 parameter).
// `what` names it in errors ("the learning rate").
double ReadScalar(const OperatorBase& op, int input, const Tensor& scalar, const char* what);

inline double ReadLearningRate(const OperatorBase& op, int input, const Tensor& lr) {
  return ReadScalar(op, input, lr, "the learning rate");
}

// The iteration counter: input `input` of `op`, a one-element int64 tensor
// (what Iter and AtomicIter keep).
int64_t ReadIteration(const OperatorBase& op, int input, const Tensor& iteration);

// Throws unless inputs `a` and `b` have the same element count and dtype.
void EnforceSameSizeAndType(const OperatorBase& op, int a_input, const Tensor& a,
                            int b_input, const Tensor& b);

}  // namespace doppio
