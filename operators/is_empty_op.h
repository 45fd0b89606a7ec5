// IsEmpty and HasElements (Caffe2's): a bool scalar saying whether a
// tensor has no elements, or whether any of the inputs has some; what
// Caffe2's control flow (If, While) tests on, as Detectron's exported nets
// do to skip the mask head when no box survived.
//
// Thread-safety: as any op.
#pragma once

#include "core/operator.h"

namespace doppio {

class IsEmptyOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class HasElementsOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
