// Squeeze (drop the size-1 dims listed in `dims`) and ExpandDims (insert
// size-1 dims at the positions in `dims`); each is the other's gradient.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

class SqueezeOp final : public Operator<CPUContext> {
 public:
  SqueezeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::vector<int> dims_;  // sorted, unique
};

class ExpandDimsOp final : public Operator<CPUContext> {
 public:
  ExpandDimsOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::vector<int> dims_;  // sorted, unique
};

}  // namespace doppio
