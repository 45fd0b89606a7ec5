// Simple losses and metrics: AveragedLoss (+ AveragedLossGradient),
// SquaredL2Distance (+ SquaredL2DistanceGradient) and Accuracy (no
// gradient); plus the class-label check every label-taking loss shares
// (cross_entropy_op, softmax_with_loss_op), whose labels are IndexTypes.
#pragma once

#include <cstdint>
#include <string>

#include "core/operator.h"

namespace doppio {
namespace loss {

// Every label lies in [0, classes), or equals `ignored` when ignoring is
// allowed (spatial SoftmaxWithLoss's -1); the error names the op, the blob,
// the offending label and its index.
template <typename L>
void CheckLabelRange(const OperatorBase& op, const std::string& blob, const L* labels,
                     int64_t count, int64_t classes, bool allow_ignored = false,
                     L ignored = L(-1)) {
  for (int64_t i = 0; i < count; ++i) {
    const L label = labels[i];
    if (allow_ignored && label == ignored) continue;
    DOPPIO_ENFORCE(label >= 0 && static_cast<int64_t>(label) < classes, "label ",
                   static_cast<int64_t>(label), " at index ", i, " of '", blob, "' is outside [0, ",
                   classes, ")");
  }
}

}  // namespace loss

// Input X (float32/float64); output: the mean of all its elements, a scalar
// of X's type (0 for an empty X).
class AveragedLossOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X and dY (one element); output dX = dY / numel(X) everywhere.
class AveragedLossGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X, Y of one shape (float32/float64); output distance of shape [N]
// (N = dim 0, or 1 for a scalar): 0.5 * ||X_i - Y_i||^2 per row.
class SquaredL2DistanceOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X, Y, dDistance; outputs dX = (X - Y) * dDistance_i, dY = -dX.
class SquaredL2DistanceGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Accuracy's `top_k` (default 1, at least 1), for the CPU and CUDA ops.
int ReadAccuracyTopK(const OperatorBase& op);

// Accuracy's shapes, for the CPU and CUDA ops: predictions X [N, D] and
// labels [N]; returns N.
int64_t CheckAccuracyShapes(const OperatorBase& op, const Tensor& X, const Tensor& labels);

// Inputs predictions [N, D] (float32/float64) and labels [N] (int32/int64);
// output a float32 scalar: the fraction of rows whose label is among the
// top_k scores (ties go to the lower class index, as in Caffe2).
class AccuracyOp final : public Operator<CPUContext> {
 public:
  AccuracyOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int top_k_;
};

}  // namespace doppio
