// GivenTensorFill and its typed variants: a tensor whose elements are listed
// in the `values` argument (how Caffe2 serializes parameters into init nets).
#pragma once

#include "core/tensor.h"
#include "operators/filler_op.h"

namespace doppio {

// T is the element type of the variant (float for GivenTensorFill, double for
// GivenTensorDoubleFill ...). Only the float variant honours a `dtype`
// argument, as in Caffe2, which lets one op name any element type.
template <typename T>
class GivenTensorFillOp final : public FillerOp<CPUContext> {
 public:
  GivenTensorFillOp(const OperatorDef& def, Workspace* workspace);

 protected:
  void Fill(Tensor* output) override;

 private:
  // The parsed values as a 1-D CPU tensor of the chosen element type.
  Tensor values_;
};

}  // namespace doppio
