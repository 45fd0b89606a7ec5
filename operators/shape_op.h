// Shape: the input's dims (or those at `axes`) as a 1-D int64 tensor.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

class ShapeOp final : public Operator<CPUContext> {
 public:
  ShapeOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), axes_(GetRepeatedArgument<int>("axes")) {}
  void RunOnDevice() override;

 private:
  std::vector<int> axes_;
};

}  // namespace doppio
