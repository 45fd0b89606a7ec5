// Lars(X, dX) -> lr_rescale: Layer-wise Adaptive Rate Scaling
// (https://arxiv.org/abs/1708.03888) as Caffe2's lars_op. The factor that
// turns a global learning rate into X's local one,
//   lr_rescale = 1 / (||dX|| / ||X|| + offset)      (L2 norms),
// or 1 when ||X|| is 0. Argument offset (default 0.5, >= 0).
#pragma once

#include "core/operator.h"

namespace doppio {

class LarsOp final : public Operator<CPUContext> {
 public:
  LarsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  float offset_;
};

}  // namespace doppio
