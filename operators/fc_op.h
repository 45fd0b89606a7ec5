// Fully connected layers: FC (Y = X W^T + b, W stored [N, K]),
// FCTransposed (Y = X W + b, W stored [K, N]) and their gradients
// FCGradient / FCTransposedGradient. float32 runs its matrix products on
// oneDNN's matmul (operators/fc_op_dnnl.h), float64 -- and float32 where
// oneDNN refuses a case -- on blas::Gemm.
//
// X is read as a matrix [M, K] split at `axis`; W as [N, K] (or [K, N]) split
// at `axis_w`. Y has X's dims before `axis` followed by N.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/operator.h"
#include "operators/fc_op_dnnl.h"

namespace doppio {

// The matrix view of one FC: X is [M, K], W is [N, K] (or [K, N]), Y is
// [M, N] with dims y_dims. Shared with the CUDA kernels.
struct FCShape {
  int64_t M = 0;
  int64_t K = 0;
  int64_t N = 0;
  std::vector<int64_t> y_dims;
};

// Validates X and W against each other (errors name `op` and the blobs) and
// derives M, K, N and Y's shape.
FCShape ComputeFCShape(const std::string& op, const std::string& x_name,
                       const std::vector<int64_t>& x_dims, const std::string& w_name,
                       const std::vector<int64_t>& w_dims, int axis, int axis_w,
                       bool weight_is_k_by_n);

// The arguments of FC, FCTransposed and their gradients, read once for the
// CPU and CUDA ops: axis and axis_w (default 1), whether W is stored
// [K, N] (the Transposed ops) and fusion_type 1, Relu after the bias
// (written by the fusion pass; the gradient ops ignore it).
struct FCArgs {
  int axis = 1;
  int axis_w = 1;
  bool weight_is_k_by_n = false;
  bool fuse_relu = false;
};
FCArgs ReadFCArgs(const OperatorBase& op, bool weight_is_k_by_n);

// The inputs of the forward ops (X, W, b) or of the gradient ops (X, W,
// dY), CPU and CUDA: one float dtype, W against X, b of [N] or dY of M x N
// elements. Returns the matrix view.
FCShape CheckFCInputs(const OperatorBase& op, const FCArgs& args);
FCShape CheckFCGradientInputs(const OperatorBase& op, const FCArgs& args);

// Inputs X, W, b (one dtype: float32 or float64); output Y. With
// fusion_type = 1 (written by the fusion pass) Y = max(X W^T + b, 0).
// float32 runs on oneDNN's matmul with the bias (and Relu) fused; float64,
// and float32 where oneDNN refuses, is GEMM on OpenBLAS then one pass for
// the bias (and Relu). Engine "DNNL" (Caffe2 nets name it) is accepted and
// runs the same code.
class FCOp : public Operator<CPUContext> {
 public:
  FCOp(const OperatorDef& def, Workspace* workspace)
      : FCOp(def, workspace, /*weight_is_k_by_n=*/false) {}
  void RunOnDevice() override;

 protected:
  FCOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n);

 private:
  FCArgs args_;
  DnnlMatMul dnnl_;
};

class FCTransposedOp final : public FCOp {
 public:
  FCTransposedOp(const OperatorDef& def, Workspace* workspace)
      : FCOp(def, workspace, /*weight_is_k_by_n=*/true) {}
};

// Inputs X, W, dY; outputs dW, db and, when a third output is named, dX.
// Takes FC's arguments.
class FCGradientOp : public Operator<CPUContext> {
 public:
  FCGradientOp(const OperatorDef& def, Workspace* workspace)
      : FCGradientOp(def, workspace, /*weight_is_k_by_n=*/false) {}
  void RunOnDevice() override;

 protected:
  FCGradientOp(const OperatorDef& def, Workspace* workspace, bool weight_is_k_by_n);

 private:
  FCArgs args_;
  DnnlMatMul dnnl_weight_grad_;
  DnnlMatMul dnnl_input_grad_;
};

class FCTransposedGradientOp final : public FCGradientOp {
 public:
  FCTransposedGradientOp(const OperatorDef& def, Workspace* workspace)
      : FCGradientOp(def, workspace, /*weight_is_k_by_n=*/true) {}
};

}  // namespace doppio
