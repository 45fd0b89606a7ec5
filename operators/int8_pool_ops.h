// Caffe2's quantized 2-D pooling over NHWC uint8 tensors:
//   Int8MaxPool, Int8MaxPoolRelu
//   Int8AveragePool, Int8AveragePoolRelu   (padding excluded from the
//                                          count; Caffe2's rounding, half up)
// with Caffe2's pooling arguments (kernel, stride, pad, global_pooling,
// legacy_pad; order must be NHWC). The output keeps the input's quantization
// unless Y_scale / Y_zero_point are given (Caffe2 requires them equal to
// the input's; Doppio requantizes when they differ).
//
// Thread-safety: one Run at a time per op.
#pragma once

#include "core/context.h"
#include "core/operator.h"
#include "operators/conv_pool_op_base.h"
#include "operators/int8_utils.h"

namespace doppio {

template <bool kMax, bool kRelu>
class Int8PoolOp final : public Operator<CPUContext> {
 public:
  Int8PoolOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  ConvPoolArgs args_;
};

}  // namespace doppio
