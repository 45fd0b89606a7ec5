// Transpose (permute a tensor's dims by `axes`, reversed by default), and
// the permutation kernel NCHW2NHWC / NHWC2NCHW share.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

// Y = X with dims permuted: Y.dims[i] = X.dims[axes[i]]. `axes` must be a
// permutation of X's dims (callers check). Y must not be X. Any dtype.
void PermuteTensor(const Tensor& X, const std::vector<int>& axes, Tensor* Y);

class TransposeOp final : public Operator<CPUContext> {
 public:
  TransposeOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), axes_(GetRepeatedArgument<int>("axes")) {}
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;
};

}  // namespace doppio
