// Add (C = A + B with numpy or legacy broadcasting), its gradient
// AddGradient, and SumReduceLike (the legacy-broadcast gradient reduction
// older Caffe2 gradient nets name).
#pragma once

#include "core/operator.h"
#include "operators/elementwise_ops_utils.h"

namespace doppio {

// Inputs A, B (one dtype: float, double, int32 or int64); output C.
class AddOp final : public Operator<CPUContext> {
 public:
  AddOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  BroadcastArgs args_;
};

// Inputs dC, A, B (A and B for their shapes only); outputs dA, dB: dC summed
// over the dims along which each input was broadcast. Takes Add's arguments.
class AddGradientOp final : public Operator<CPUContext> {
 public:
  AddGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  BroadcastArgs args_;
};

// Output C has B's shape: A summed over the dims along which B would be
// legacy-broadcast onto A (arguments axis, axis_str, order).
class SumReduceLikeOp final : public Operator<CPUContext> {
 public:
  SumReduceLikeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  BroadcastArgs args_;
};

}  // namespace doppio
