// Caffe2's conversions into and out of Int8TensorCPU, and its Int8 fills:
//   Int8Quantize           float32 X -> uint8 Y (Y_scale, Y_zero_point)
//   Int8Dequantize         Int8 X -> float32 (q - zero_point) * scale
//   Int8GivenTensorFill    uint8 values (a byte string) of `shape`
//   Int8GivenIntTensorFill int32 values (biases) of `shape`
// Inference only: quantization has no gradient in Caffe2 either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/operator.h"
#include "operators/int8_utils.h"

namespace doppio {

class Int8QuantizeOp final : public Operator<CPUContext> {
 public:
  Int8QuantizeOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
};

class Int8DequantizeOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override;
};

// Both fills: the values are read and checked against `shape` once, when
// the op is made.
class Int8GivenTensorFillOp final : public Operator<CPUContext> {
 public:
  Int8GivenTensorFillOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
  std::vector<int64_t> shape_;
  std::string values_;
};

class Int8GivenIntTensorFillOp final : public Operator<CPUContext> {
 public:
  Int8GivenIntTensorFillOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int8::Quantization y_;
  std::vector<int64_t> shape_;
  std::vector<int32_t> values_;
};

}  // namespace doppio
