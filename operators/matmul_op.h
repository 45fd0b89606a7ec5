// Matrix products: MatMul (two tensors each read as a matrix) and
// BatchMatMul (a batch of matrix products over the leading dims, with
// numpy.matmul broadcasting under broadcast=1). Their gradients are
// expressed with the same ops, as in Caffe2.
#pragma once

#include "core/operator.h"

namespace doppio {

// Inputs A, B (float32 or float64) and an optional third input whose shape
// the output takes (the gradient ops use it to give dA A's shape); output Y.
class MatMulOp final : public Operator<CPUContext> {
 public:
  MatMulOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_a_;
  int axis_b_;
  bool trans_a_;
  bool trans_b_;
};

// Inputs A, B (float32 or float64); output Y.
class BatchMatMulOp final : public Operator<CPUContext> {
 public:
  BatchMatMulOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool trans_a_;
  bool trans_b_;
  bool broadcast_;
};

}  // namespace doppio
