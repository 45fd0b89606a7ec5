// Caffe2's quantized elementwise ops (uint8 Int8TensorCPU in and out):
//   Int8Add, Int8AddRelu     A + B, same shapes (no broadcast, as Caffe2's)
//   Int8Sum, Int8SumRelu     the sum of one or more inputs of one shape
//   Int8Relu, Int8LeakyRelu (alpha), Int8Sigmoid
//   Int8Softmax              over the dims after the first (Caffe2's), or
//                            from `axis`
// Each computes on the reals its inputs stand for and rounds once into the
// output quantization (int8_utils.h). Unary ops map each of the 256 input
// values once. Sigmoid and Softmax default to Caffe2's fixed output
// quantization (scale 1/256, zero point 0); Relu to its input's.
//
// Thread-safety: one Run at a time per op.
#pragma once

#include <array>
#include <cstdint>

#include "core/context.h"
#include "core/operator.h"
#include "operators/int8_utils.h"

namespace doppio {

template <bool kRelu>
class Int8SumOp final : public Operator<CPUContext> {
 public:
  Int8SumOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
};

// Relu, LeakyRelu and Sigmoid: y = f(x) through a 256-entry table.
class Int8UnaryOp final : public Operator<CPUContext> {
 public:
  Int8UnaryOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  enum class Kind { kRelu, kLeakyRelu, kSigmoid };
  Kind kind_;
  float alpha_ = 0.01f;
};

class Int8SoftmaxOp final : public Operator<CPUContext> {
 public:
  Int8SoftmaxOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int axis_;
};

}  // namespace doppio
