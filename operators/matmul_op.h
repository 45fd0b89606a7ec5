// Matrix products: MatMul (two tensors each read as a matrix) and
// BatchMatMul (a batch of matrix products over the leading dims, with
// numpy.matmul broadcasting under broadcast=1). Their gradients are
// expressed with the same ops, as in Caffe2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"

namespace doppio {

// MatMul's product op(A) [M, K] x op(B) [K, N], A and B read as matrices
// split at axis_a / axis_b. Shared with the CUDA kernel.
struct MatMulShape {
  int64_t M = 0, K = 0, N = 0;
};
// Throws, naming `op` and the blobs, when the inner dims differ.
MatMulShape ComputeMatMulShape(const std::string& op, const std::string& a_name,
                               const std::vector<int64_t>& a_dims, const std::string& b_name,
                               const std::vector<int64_t>& b_dims, int axis_a, int axis_b,
                               bool trans_a, bool trans_b);

// MatMul's arguments, read once for the CPU and CUDA ops: axis_a, axis_b
// (default 1), trans_a, trans_b (default 0).
struct MatMulArgs {
  int axis_a = 1;
  int axis_b = 1;
  bool trans_a = false;
  bool trans_b = false;
};
MatMulArgs ReadMatMulArgs(const OperatorBase& op);

// MatMul's inputs checked (one float dtype, inner dims equal, the optional
// third input holding M x N elements) and its product with Y's dims: [M, N],
// or the third input's shape.
struct MatMulPlan {
  MatMulShape shape;
  std::vector<int64_t> y_dims;
};
MatMulPlan PlanMatMul(const OperatorBase& op, const MatMulArgs& args);

// Inputs A, B (float32 or float64) and an optional third input whose shape
// the output takes (the gradient ops use it to give dA A's shape); output Y.
class MatMulOp final : public Operator<CPUContext> {
 public:
  MatMulOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  MatMulArgs args_;
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
