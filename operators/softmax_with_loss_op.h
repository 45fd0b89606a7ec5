// SoftmaxWithLoss: softmax and cross-entropy in one numerically stable op,
// and SoftmaxWithLossGradient.
//
// Logits X are split at `axis` (default 1) into N rows of D classes. Targets
// are integer class labels ([N] or [N, 1]) or, with label_prob=1,
// probability rows shaped like X. An optional weight per row scales its
// loss; loss = scale * sum_i w_i l_i / sum_i w_i (0 when the weights sum to
// 0). With spatial=1, X is [N, D, H, W] (NCHW), each pixel is a row with its
// label in [N, H, W], label -1 is ignored, and weights are per pixel;
// SpatialSoftmaxWithLoss (+ gradient) is that form under Caffe2's name.
#pragma once

#include "core/operator.h"
#include "operators/loss_functors.h"

namespace doppio {

struct SoftmaxLossArgs {
  float scale = 1.0f;
  bool label_prob = false;
  bool spatial = false;
  int axis = 1;
};

// The arguments, checked (shared with the CUDA ops, loss_op_gpu.cc).
SoftmaxLossArgs ReadSoftmaxLossArgs(const OperatorBase& op);

// Checks the shapes and types of logits X, labels and the optional weights
// (input `weights_index`) against each other and returns X's layout; errors
// name the op and the blobs. Label values are not looked at.
functors::SoftmaxLossLayout CheckSoftmaxLossInputs(const OperatorBase& op,
                                                   const SoftmaxLossArgs& args, const Tensor& X,
                                                   const Tensor& labels, const Tensor* weights,
                                                   int weights_index);

// The gradient op's softmax P (input `p_index`) has the logits' shape and
// type, and its loss gradient (the last input) is one value of that type
// (shared with the CUDA op).
void CheckSoftmaxLossGradientInputs(const OperatorBase& op, const Tensor& X, const Tensor& P,
                                    int p_index, const Tensor& d_loss);

// Inputs logits, labels, [weight_tensor]; outputs softmax (X's shape) and
// loss (a scalar of X's type).
class SoftmaxWithLossOp final : public Operator<CPUContext> {
 public:
  SoftmaxWithLossOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  SoftmaxLossArgs args_;
};

// Inputs X, labels, [weight_tensor], P (the forward softmax), d_loss;
// output dX = (P - target) * w_i * scale * d_loss / sum_i w_i.
class SoftmaxWithLossGradientOp final : public Operator<CPUContext> {
 public:
  SoftmaxWithLossGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  SoftmaxLossArgs args_;
};

}  // namespace doppio
