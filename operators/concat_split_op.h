// Concat (join tensors along an axis; outputs the result and split_info, the
// inputs' sizes along it) and Split (the reverse, sizes from argument
// `split`, a second input, or equal parts). Each is the other's gradient.
// With add_axis=1 Concat stacks its inputs along a new axis and Split
// removes it.
#pragma once

#include <vector>

#include "core/operator.h"

namespace doppio {

class ConcatOp final : public Operator<CPUContext> {
 public:
  ConcatOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
  bool add_axis_;
};

class SplitOp final : public Operator<CPUContext> {
 public:
  SplitOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // The size of each output along the axis.
  std::vector<int64_t> Sizes(int64_t axis_dim);

  int axis_;
  bool add_axis_;
  std::vector<int64_t> split_;
};

}  // namespace doppio
