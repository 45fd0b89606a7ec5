// Operators that ONNX models need and the rest of Doppio lacks, under
// Caffe2's names where Caffe2 had the op:
//   - unary math: Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
//     Atanh, Erf (each with an <Op>Gradient taking X and dY), and Floor,
//     Ceil, Round, Sign (piecewise constant, no gradient);
//   - Where(C, X, Y): elementwise select with numpy broadcasting of all three;
//   - Expand(X, shape): numpy's broadcast_to, bidirectional as in ONNX, and
//     ExpandGradient(dY, X), which sums dY back to X's shape;
//   - ArgMax / ArgMin along one axis (int64 indices).
// The ONNX importer (python_api/doppio/onnx) maps ONNX nodes onto these; they
// are ordinary operators usable from any net.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"

namespace doppio {

// Y = X if C else Y, with C bool and X, Y of one type; the three shapes
// broadcast as in numpy.
class WhereOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Y = X broadcast against `shape` (input 1, 1-D int32 or int64): the output
// shape is numpy's broadcast of X's shape and `shape`, so a 1 in `shape`
// keeps X's dim (ONNX Expand), unlike numpy.broadcast_to.
class ExpandOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// dX = dY summed over the dims along which Expand stretched X (input 1, read
// only for its shape).
class ExpandGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// The index of the largest (ArgMax) or smallest (ArgMin) element along
// `axis`; ties go to the first index, or the last with select_last_index.
class ArgReduceOp final : public Operator<CPUContext> {
 public:
  ArgReduceOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool is_max_;
  int axis_;
  bool keepdims_;
  bool select_last_index_;
};

// The shape of the output of ArgMax/ArgMin for an input of `dims`; errors
// name the op. Shared by the kernel and shape inference.
std::vector<int64_t> ArgReduceOutputDims(const std::string& op_type,
                                         const std::vector<int64_t>& dims, int axis,
                                         bool keepdims);

}  // namespace doppio
