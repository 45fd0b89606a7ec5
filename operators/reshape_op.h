// Ops that change a tensor's shape but not its elements: Reshape (outputs
// the reshaped tensor and the old shape), Flatten (to 2-D at `axis`),
// FlattenToVec (to 1-D) and ResizeLike (input 0's elements in input 1's
// shape, the gradient of both flattens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/operator.h"

namespace doppio {

// Caffe2's reshape rule: a 0 in `requested` copies the input's dim at that
// position, one -1 takes whatever size remains. Errors name `op_type`.
std::vector<int64_t> ResolveReshape(const std::string& op_type,
                                    const std::vector<int64_t>& input_dims,
                                    std::vector<int64_t> requested);

class ReshapeOp final : public Operator<CPUContext> {
 public:
  ReshapeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  std::vector<int64_t> new_shape_;
};

class FlattenOp final : public Operator<CPUContext> {
 public:
  FlattenOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 1)) {}
  void RunOnDevice() override;

 private:
  int axis_;
};

class FlattenToVecOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

class ResizeLikeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

}  // namespace doppio
