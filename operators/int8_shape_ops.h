// Caffe2's quantized ops that move uint8 values without computing with
// them (NHWC where images are meant):
//   Int8Reshape (outputs reshaped, old_shape), Int8Flatten, Int8Slice,
//   Int8Transpose, Int8Concat       the ordinary op on the integers
//                                   (int8_twin_op.h)
//   Int8ResizeNearest               width_scale / height_scale, NHWC
//   Int8ChannelShuffle              group, NHWC
// The output keeps the input's quantization unless Y_scale / Y_zero_point
// are given (Caffe2 requires them equal; Doppio requantizes). Int8Concat
// requantizes each input into the output's quantization.
//
// Thread-safety: one Run at a time per op.
#pragma once

#include <memory>

#include "core/context.h"
#include "core/operator.h"
#include "operators/int8_twin_op.h"
#include "operators/int8_utils.h"

namespace doppio {

class Int8MoveOp final : public Operator<CPUContext> {
 public:
  Int8MoveOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Int8 inputs into the twin: shared as they are, or requantized into
  // `common` when the op joins inputs of several quantizations (Concat).
  void FeedTwin(const int8::Quantization* common);

  bool float_twin_;  // ResizeNearest runs on float copies (it is float-only)
  std::unique_ptr<TwinOp> twin_;
  std::vector<Tensor> requantized_;
};

class Int8ChannelShuffleOp final : public Operator<CPUContext> {
 public:
  Int8ChannelShuffleOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int64_t group_;
};

}  // namespace doppio
