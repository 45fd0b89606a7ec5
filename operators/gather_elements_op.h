// GatherElements and GatherElementsGradient (ONNX's GatherElements,
// torch.gather): an element-wise gather along one axis.
//
//   DATA [d0, ..., dr-1] (any dtype); INDICES of DATA's rank, int32 or
//   int64, each dim at most DATA's except along `axis`; values in
//   [-d_axis, d_axis) (negative ones count from the end)
//   OUTPUT (INDICES' shape)[p] = DATA[p with p[axis] = INDICES[p]]
//
// Thread-safety: as any op.
#pragma once

#include "core/operator.h"

namespace doppio {

class GatherElementsOp final : public Operator<CPUContext> {
 public:
  GatherElementsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

// Inputs DATA, INDICES, dOUTPUT; output dDATA (DATA's shape, float32 or
// float64): each dOUTPUT element added where it was read from, in output
// order.
class GatherElementsGradientOp final : public Operator<CPUContext> {
 public:
  GatherElementsGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

}  // namespace doppio
