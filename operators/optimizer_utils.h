// Arguments and input checks shared by the optimizer ops (Adam, Adagrad,
// RmsProp, the momentum SGD family, LearningRate), CPU and CUDA alike.
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

// The momentum SGD family's arguments (MomentumSGD, MomentumSGDUpdate,
// SparseMomentumSGDUpdate): momentum (default 0), nesterov (default 0).
struct MomentumSGDArgs {
  float momentum = 0.0f;
  bool nesterov = false;
};
MomentumSGDArgs ReadMomentumSGDArgs(const OperatorBase& op);

// Adam's arguments (Caffe2's defaults) and its bias correction
// sqrt(1 - beta2^t) / (1 - beta1^t) at step t = iteration + 1.
struct AdamArgs {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-5f;
  double Correction(int64_t iteration) const;
};
AdamArgs ReadAdamArgs(const OperatorBase& op);

// Adagrad's and SparseAdagrad's arguments: epsilon (default 1e-5) and decay
// (default 1; SparseAdagrad, as in Caffe2, has none and ignores it).
struct AdagradArgs {
  float epsilon = 1e-5f;
  float decay = 1.0f;
};
AdagradArgs ReadAdagradArgs(const OperatorBase& op);

// The mean of g[0..n)^2, 0 when n is 0: what a gradient row adds to a
// row-wise optimizer moment (RowWiseSparseAdagrad, RowWiseSparseAdam).
template <typename T>
double RowMeanSquare(const T* g, int64_t n) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(g[j]) * g[j];
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

// Throws unless inputs `a` and `b` have the same element count and dtype.
void EnforceSameSizeAndType(const OperatorBase& op, int a_input, const Tensor& a,
                            int b_input, const Tensor& b);

}  // namespace doppio
