// Whole-tensor and per-row reductions from Caffe2's reduction_ops:
// SumElements (sum or mean of all elements, a scalar) with
// SumElementsGradient, and RowwiseMax / ColwiseMax (the max of each row or
// column of a batch of matrices) with RowwiseMaxGradient / ColwiseMaxGradient.
#pragma once

#include "core/operator.h"

namespace doppio {

// Input X (float32 or float64); output a 0-d tensor: the sum of X, or its
// mean with average=1.
class SumElementsOp final : public Operator<CPUContext> {
 public:
  SumElementsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool average_;
};

// Inputs X, dSum (one element); output dX of X's shape, every element dSum
// (divided by X's size with average=1).
class SumElementsGradientOp final : public Operator<CPUContext> {
 public:
  SumElementsGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  bool average_;
};

// Input X of shape [B, M, N] (or [M, N], one matrix without a batch dim);
// output the max of each row, [B, M], or of each column, [B, N].
class MatrixMaxOp : public Operator<CPUContext> {
 public:
  void RunOnDevice() override;

 protected:
  MatrixMaxOp(const OperatorDef& def, Workspace* workspace, bool rowwise)
      : Operator<CPUContext>(def, workspace), rowwise_(rowwise) {}

 private:
  bool rowwise_;
};

class RowwiseMaxOp final : public MatrixMaxOp {
 public:
  RowwiseMaxOp(const OperatorDef& def, Workspace* workspace)
      : MatrixMaxOp(def, workspace, /*rowwise=*/true) {}
};

class ColwiseMaxOp final : public MatrixMaxOp {
 public:
  ColwiseMaxOp(const OperatorDef& def, Workspace* workspace)
      : MatrixMaxOp(def, workspace, /*rowwise=*/false) {}
};

// Inputs X, Y (the forward output), dY; output dX: dY at every element equal
// to its row's (column's) max, 0 elsewhere.
class MatrixMaxGradientOp : public Operator<CPUContext> {
 public:
  void RunOnDevice() override;

 protected:
  MatrixMaxGradientOp(const OperatorDef& def, Workspace* workspace, bool rowwise)
      : Operator<CPUContext>(def, workspace), rowwise_(rowwise) {}

 private:
  bool rowwise_;
};

class RowwiseMaxGradientOp final : public MatrixMaxGradientOp {
 public:
  RowwiseMaxGradientOp(const OperatorDef& def, Workspace* workspace)
      : MatrixMaxGradientOp(def, workspace, /*rowwise=*/true) {}
};

class ColwiseMaxGradientOp final : public MatrixMaxGradientOp {
 public:
  ColwiseMaxGradientOp(const OperatorDef& def, Workspace* workspace)
      : MatrixMaxGradientOp(def, workspace, /*rowwise=*/false) {}
};

}  // namespace doppio
