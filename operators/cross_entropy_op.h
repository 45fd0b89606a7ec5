// Cross-entropy losses, each with its Caffe2 gradient op:
//   LabelCrossEntropy(X, label) -> Y        Y_i = -log(X[i, label_i])
//   CrossEntropy(X, label) -> Y             Y_i = -sum_j label_ij log(X_ij)
//   SigmoidCrossEntropyWithLogits(logits, targets) -> xentropy
//       the mean over the last dim of the binary cross-entropy of
//       sigmoid(logits) against targets, computed stably from the logits.
//   WeightedSigmoidCrossEntropyWithLogits(logits, targets, weights) -> the
//       same with each element's loss multiplied by its weight.
// X holds probabilities (usually Softmax's output) seen as [N, D] with N =
// dim 0 (or N = 1 for a 1-D X); logs are taken of max(X, 1e-20), as Caffe2
// does, so a zero probability gives a large finite loss.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs X (float32/float64) and label ([N] or [N, 1], int32/int64, each in
// [0, D)); output Y [N].
class LabelCrossEntropyOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X, label, dY; output dX: -dY_i / X[i, label_i] at the label, 0
// elsewhere.
class LabelCrossEntropyGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X and label (soft labels in [0, 1], X's type, shaped like X or
// [N, D]); output Y [N].
class CrossEntropyOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Inputs X, label, dY; output dX = -label * dY_i / X.
class CrossEntropyGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Arguments log_D_trick and unjoined_lr_loss (both default off, at most one
// on) select the loss variant.
struct SigmoidCrossEntropyVariant {
  bool log_d_trick = false;
  bool unjoined_lr_loss = false;
};

// Inputs logits and targets of one shape; output xentropy with the last dim
// dropped. As WeightedSigmoidCrossEntropyWithLogits (kWeighted), a third
// input of the same shape weighs each element's loss.
class SigmoidCrossEntropyWithLogitsOp final : public Operator<CPUContext> {
 public:
  SigmoidCrossEntropyWithLogitsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  SigmoidCrossEntropyVariant variant_;
  bool weighted_ = false;
};

// Inputs g (gradient of xentropy), logits, targets (and weights, for the
// weighted op); output dlogits.
class SigmoidCrossEntropyWithLogitsGradientOp final : public Operator<CPUContext> {
 public:
  SigmoidCrossEntropyWithLogitsGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  SigmoidCrossEntropyVariant variant_;
  bool weighted_ = false;
};

// MakeTwoClass(X) -> Y of X's shape + [2]: (1 - p, p) for each
// probability p of X (float32/float64, in [0, 1]).
// MakeTwoClassGradient(dY) -> dX = dY[..., 1] - dY[..., 0].
class MakeTwoClassOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class MakeTwoClassGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
