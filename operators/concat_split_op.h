// Concat (join tensors along an axis; outputs the result and split_info, the
// inputs' sizes along it) and Split (the reverse, sizes from argument
// `split`, a second input, or equal parts). Each is the other's gradient.
// With add_axis=1 Concat stacks its inputs along a new axis and Split
// removes it.
#pragma once

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/operator.h"

namespace doppio {

// Caffe2's rule for Concat and Split: `axis` (default -1), or the C dim of
// `order` (NCHW: 1, NHWC: 3) when only the order is given; NCHW by default.
int ConcatAxisArgument(const std::string& op_type, const ArgumentHelper& args);

// Concat's and Split's arguments, read once for the CPU and CUDA ops:
// the axis (ConcatAxisArgument) and add_axis, which counts only with an
// explicit axis, as in Caffe2.
struct ConcatArgs {
  int axis = -1;
  bool add_axis = false;
};
ConcatArgs ReadConcatArgs(const OperatorBase& op);

// Concat's layout, shared by the CPU and CUDA ops: every input checked
// against input 0 (type, and shape but along the axis), the sizes along the
// axis written to `split_info` (host int32, for Concat's gradient), and the
// output viewed as [before, total, after] with `total` the joined axis.
struct ConcatLayout {
  std::vector<int64_t> out_dims;
  int64_t before = 1;
  int64_t total = 0;
  int64_t after = 1;
};
ConcatLayout PlanConcat(const OperatorBase& op, const std::vector<const Tensor*>& inputs,
                        const ConcatArgs& args, Tensor* split_info);

class ConcatOp final : public Operator<CPUContext> {
 public:
  ConcatOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  ConcatArgs args_;
};

class SplitOp final : public Operator<CPUContext> {
 public:
  SplitOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // The size of each output along the axis.
  std::vector<int64_t> Sizes(int64_t axis_dim);

  ConcatArgs args_;
  std::vector<int64_t> split_;
};

// Split's gradient: Concat of the outputs' gradients along the split axis,
// with zeros (ConstantFill shaped like the output) for outputs nobody used.
// Ops that cut one input into consecutive parts along `axis` share it
// (Chunk, operators/scatter_gather_op.cc).
class SplitGradientMaker : public GradientMakerBase {
 public:
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override;

 protected:
  // The op's axis when it names none (and no `order`): Split's is 1, as
  // Concat's; an op with another default passes it on explicitly.
  virtual int DefaultAxis() const { return 1; }
};

}  // namespace doppio
