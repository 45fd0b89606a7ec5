// SparseNormalize(param, indices, grad) -> param, in place (Caffe2's
// sparse max-norm / constant-norm regularization): each row of param named
// by `indices` is scaled to L2 norm `norm` (argument, default 1), or with
// use_max_norm (default true) only scaled down, when longer than `norm`.
// `grad` only gives the row size (its element count over the indices').
// A row of norm 0 is left as it is (Caffe2 adds 1e-12 to the norm, which
// scales it by norm / 1e-12).
#pragma once

#include "core/operator.h"

namespace doppio {

class SparseNormalizeOp final : public Operator<CPUContext> {
 public:
  SparseNormalizeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool use_max_norm_;
  float norm_;
};

}  // namespace doppio
