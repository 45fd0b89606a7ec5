#include "operators/int8_quantize_ops.h"

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// Caffe2's QuantizeUint8: value / scale in float, rounded to nearest even.
// NaN (which Caffe2 leaves undefined) quantizes to the zero point.
inline uint8_t QuantizeFloat(float value, const int8::Quantization& q) {
  const float scaled = value / q.scale;
  if (!(scaled == scaled)) return static_cast<uint8_t>(q.zero_point);
  const float clamped = std::fmin(std::fmax(scaled, -1024.0f), 1024.0f);
  // Exact for floats: RoundToEven of the widened value is nearbyintf's.
  const int32_t r = q.zero_point + static_cast<int32_t>(int8::RoundToEven(clamped));
  return static_cast<uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
}

std::vector<int64_t> FillShape(const OperatorBase& op, int64_t values) {
  std::vector<int64_t> shape = op.GetRepeatedArgument<int64_t>("shape");
  const int64_t numel = CheckedNumElements(shape);
  DOPPIO_ENFORCE_EQ(numel, values, "shape ", shape, " has ", numel, " elements but ", values,
                    " values are given");
  return shape;
}

}  // namespace

Int8QuantizeOp::Int8QuantizeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), y_(int8::OutputQuantization(*this)) {}

void Int8QuantizeOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat, "X '", input_name(0), "' must be float32, not ",
                 DataTypeName(X.dtype()));
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, X.dims());
  const float* x = X.data<float>();
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = QuantizeFloat(x[i], y_);
  });
}

void Int8DequantizeOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Quantization q = int8::QuantizationOf(X);
  Tensor* Y = Output(0);
  Y->Resize(X.t.dims());
  const uint8_t* x = X.t.data<uint8_t>();
  float* y = Y->mutable_data<float>();
  ParallelFor(X.t.numel(), [&](int64_t begin, int64_t end) {
    int8::Dequantize(x + begin, end - begin, q, y + begin);
  });
}

Int8GivenTensorFillOp::Int8GivenTensorFillOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      y_(int8::OutputQuantization(*this)),
      values_(GetSingleArgument<std::string>("values", "")) {
  shape_ = FillShape(*this, static_cast<int64_t>(values_.size()));
}

void Int8GivenTensorFillOp::RunOnDevice() {
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, shape_);
  std::copy(values_.begin(), values_.end(), reinterpret_cast<char*>(Y->t.mutable_data<uint8_t>()));
}

Int8GivenIntTensorFillOp::Int8GivenIntTensorFillOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {
  // A bias's quantization is the product of its input's and weight's; its
  // zero point is not limited to uint8's range.
  y_ = {GetSingleArgument<float>("Y_scale", 1.0f),
        static_cast<int32_t>(GetSingleArgument<int64_t>("Y_zero_point", 0))};
  for (int64_t v : GetRepeatedArgument<int64_t>("values")) {
    DOPPIO_ENFORCE(
        v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
        "value ", v, " does not fit int32");
    values_.push_back(static_cast<int32_t>(v));
  }
  shape_ = FillShape(*this, static_cast<int64_t>(values_.size()));
}

void Int8GivenIntTensorFillOp::RunOnDevice() {
  int8::Int8TensorCPU* Y = OutputAs<int8::Int8TensorCPU>(0);
  Y->scale = y_.scale;
  Y->zero_point = y_.zero_point;
  Y->t.Resize(shape_);
  std::copy(values_.begin(), values_.end(), Y->t.mutable_data<int32_t>());
}

REGISTER_CPU_OPERATOR(Int8Quantize, Int8QuantizeOp);
REGISTER_CPU_OPERATOR(Int8Dequantize, Int8DequantizeOp);
REGISTER_CPU_OPERATOR(Int8GivenTensorFill, Int8GivenTensorFillOp);
REGISTER_CPU_OPERATOR(Int8GivenIntTensorFill, Int8GivenIntTensorFillOp);

OPERATOR_SCHEMA(Int8Quantize)
    .NumInputs(1)
    .NumOutputs(1)
    .Apply(int8::OutputQuantizationArgs)
    .Input(0, "X", "float32 tensor")
    .Output(0, "Y", "Int8TensorCPU (uint8) of X's shape")
    .Doc("Quantizes X: Y = clamp(round(X / Y_scale) + Y_zero_point, 0, 255), ties to even.");

OPERATOR_SCHEMA(Int8Dequantize)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "X", "Int8TensorCPU (uint8)")
    .Output(0, "Y", "float32 tensor of X's shape")
    .Doc("The reals an Int8 tensor stands for: Y = (X - zero_point) * scale.");

OPERATOR_SCHEMA(Int8GivenTensorFill)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("values", "(bytes) the uint8 elements, one byte each", true)
    .Arg("shape", "(ints) the output's shape; its element count must equal len(values)")
    .Apply(int8::OutputQuantizationArgs)
    .Output(0, "Y", "Int8TensorCPU (uint8)")
    .Doc("An Int8 tensor of the given bytes, scale and zero point (quantized weights).");

OPERATOR_SCHEMA(Int8GivenIntTensorFill)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("values", "(ints) the int32 elements", true)
    .Arg("shape", "(ints) the output's shape; its element count must equal len(values)")
    .Arg("Y_scale", "(float, default 1) the scale (a bias: input scale x weight scale)")
    .Arg("Y_zero_point", "(int, default 0) the zero point")
    .Output(0, "Y", "Int8TensorCPU holding int32 (quantized biases)")
    .Doc("An Int8 tensor of int32 values (the biases of Int8Conv and Int8FC).");

SHOULD_NOT_DO_GRADIENT(Int8Quantize, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Dequantize, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8GivenTensorFill, "a fill has no inputs");
SHOULD_NOT_DO_GRADIENT(Int8GivenIntTensorFill, "a fill has no inputs");

}  // namespace doppio
