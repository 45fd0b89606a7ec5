// Reductions over a set of axes: ReduceSum, ReduceMean, ReduceMax, and
// their gradients ReduceSumGradient / ReduceMeanGradient / ReduceMaxGradient.
//
// Arguments (Caffe2's): `axes`, the dims to reduce (all of them when absent;
// negative values count from the end), and `keepdims` (default 1), which
// keeps each reduced dim as a 1 instead of dropping it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/operator.h"

namespace doppio {

enum class ReduceKind { kSum, kMean, kMax };

// Input X; output Y.
class ReduceOp : public Operator<CPUContext> {
 public:
  void RunOnDevice() override;

 protected:
  ReduceOp(const OperatorDef& def, Workspace* workspace, ReduceKind kind);

 private:
  ReduceKind kind_;
  std::vector<int> axes_;
  bool keepdims_;
};

class ReduceSumOp final : public ReduceOp {
 public:
  ReduceSumOp(const OperatorDef& def, Workspace* workspace)
      : ReduceOp(def, workspace, ReduceKind::kSum) {}
};

class ReduceMeanOp final : public ReduceOp {
 public:
  ReduceMeanOp(const OperatorDef& def, Workspace* workspace)
      : ReduceOp(def, workspace, ReduceKind::kMean) {}
};

class ReduceMaxOp final : public ReduceOp {
 public:
  ReduceMaxOp(const OperatorDef& def, Workspace* workspace)
      : ReduceOp(def, workspace, ReduceKind::kMax) {}
};

// Inputs dY, X, Y (the forward op's output; only ReduceMax reads its
// values); output dX of X's shape. Takes the forward op's arguments.
class ReduceGradientOp : public Operator<CPUContext> {
 public:
  void RunOnDevice() override;

 protected:
  ReduceGradientOp(const OperatorDef& def, Workspace* workspace, ReduceKind kind);

 private:
  ReduceKind kind_;
  std::vector<int> axes_;
  bool keepdims_;
};

class ReduceSumGradientOp final : public ReduceGradientOp {
 public:
  ReduceSumGradientOp(const OperatorDef& def, Workspace* workspace)
      : ReduceGradientOp(def, workspace, ReduceKind::kSum) {}
};

class ReduceMeanGradientOp final : public ReduceGradientOp {
 public:
  ReduceMeanGradientOp(const OperatorDef& def, Workspace* workspace)
      : ReduceGradientOp(def, workspace, ReduceKind::kMean) {}
};

class ReduceMaxGradientOp final : public ReduceGradientOp {
 public:
  ReduceMaxGradientOp(const OperatorDef& def, Workspace* workspace)
      : ReduceGradientOp(def, workspace, ReduceKind::kMax) {}
};

}  // namespace doppio
