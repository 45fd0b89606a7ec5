#include "operators/int8_elementwise_ops.h"

#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

// Caffe2's QNNPACK Sigmoid and Softmax write probabilities in 1/256 steps.
constexpr int8::Quantization kProbabilityQuantization{1.0f / 256.0f, 0};

}  // namespace

template <bool kRelu>
Int8SumOp<kRelu>::Int8SumOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), y_(int8::OutputQuantization(*this)) {}

template <bool kRelu>
void Int8SumOp<kRelu>::RunOnDevice() {
  const int n_inputs = InputSize();
  std::vector<const uint8_t*> x(n_inputs);
  std::vector<int8::Quantization> q(n_inputs);
  const int8::Int8TensorCPU& X0 = int8::Int8Input(*this, 0);
  const std::vector<int64_t> dims = X0.t.dims();
  for (int i = 0; i < n_inputs; ++i) {
    const int8::Int8TensorCPU& Xi = int8::Int8Input(*this, i);
    DOPPIO_ENFORCE(Xi.t.dims() == dims, "input '", input_name(i), "' has shape ", Xi.t.dims(),
                   ", not the first input's ", dims, " (Int8 sums do not broadcast)");
    x[i] = Xi.t.data<uint8_t>();
    q[i] = int8::QuantizationOf(Xi);
  }
  // Inputs are read by pointer; an in-place output keeps its storage (same
  // shape, same dtype), so they stay valid.
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, y_, dims);
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  const int8::Limits limits = int8::ActivationLimits(y_, kRelu);
  ParallelFor(Y->t.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      double real = 0;
      for (int i = 0; i < n_inputs; ++i) {
        real += static_cast<double>(q[i].scale) * (x[i][j] - q[i].zero_point);
      }
      y[j] = int8::QuantizeReal(real, y_, limits);
    }
  });
}

Int8UnaryOp::Int8UnaryOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace) {
  if (def.type() == "Int8Relu") {
    kind_ = Kind::kRelu;
  } else if (def.type() == "Int8LeakyRelu") {
    kind_ = Kind::kLeakyRelu;
    alpha_ = GetSingleArgument<float>("alpha", 0.01f);
    DOPPIO_ENFORCE(std::isfinite(alpha_), "alpha ", alpha_, " must be finite");
  } else {
    kind_ = Kind::kSigmoid;
  }
}

void Int8UnaryOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Quantization xq = int8::QuantizationOf(X);
  const int8::Quantization yq = kind_ == Kind::kSigmoid
                                    ? int8::OutputQuantizationOr(*this, kProbabilityQuantization)
                                    : int8::OutputQuantizationOr(*this, xq);
  std::array<uint8_t, 256> table;
  for (int v = 0; v < 256; ++v) {
    const double real = static_cast<double>(xq.scale) * (v - xq.zero_point);
    double out = real;
    if (kind_ == Kind::kRelu) out = real > 0 ? real : 0.0;
    if (kind_ == Kind::kLeakyRelu) out = real >= 0 ? real : alpha_ * real;
    if (kind_ == Kind::kSigmoid) out = 1.0 / (1.0 + std::exp(-real));
    table[v] = int8::QuantizeReal(out, yq);
  }
  const uint8_t* x = X.t.data<uint8_t>();
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, yq, X.t.dims());
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  ParallelFor(Y->t.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = table[x[i]];
  });
}

Int8SoftmaxOp::Int8SoftmaxOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 1)) {}

void Int8SoftmaxOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  const int8::Quantization xq = int8::QuantizationOf(X);
  const int8::Quantization yq = int8::OutputQuantizationOr(*this, kProbabilityQuantization);
  const int axis = X.t.ndim() == 0 ? 0 : X.t.CanonicalAxis(axis_);
  const int64_t rows = X.t.SizeToDim(axis);
  const int64_t cols = X.t.SizeFromDim(axis);
  const uint8_t* x = X.t.data<uint8_t>();
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, yq, X.t.dims());
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  ParallelFor(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const uint8_t* xr = x + r * cols;
          uint8_t* yr = y + r * cols;
          int max_q = 0;
          for (int64_t c = 0; c < cols; ++c) max_q = std::max<int>(max_q, xr[c]);
          // exp(scale * (q - max)) by input value: at most 256 distinct terms.
          double e[256];
          for (int v = 0; v < 256; ++v) e[v] = v <= max_q ? std::exp(xq.scale * (v - max_q)) : 0;
          double total = 0;
          for (int64_t c = 0; c < cols; ++c) total += e[xr[c]];
          for (int64_t c = 0; c < cols; ++c) yr[c] = int8::QuantizeReal(e[xr[c]] / total, yq);
        }
      },
      RowsPerThread(cols));
}

REGISTER_CPU_OPERATOR(Int8Add, Int8SumOp<false>);
REGISTER_CPU_OPERATOR(Int8AddRelu, Int8SumOp<true>);
REGISTER_CPU_OPERATOR(Int8Sum, Int8SumOp<false>);
REGISTER_CPU_OPERATOR(Int8SumRelu, Int8SumOp<true>);
REGISTER_CPU_OPERATOR(Int8Relu, Int8UnaryOp);
REGISTER_CPU_OPERATOR(Int8LeakyRelu, Int8UnaryOp);
REGISTER_CPU_OPERATOR(Int8Sigmoid, Int8UnaryOp);
REGISTER_CPU_OPERATOR(Int8Softmax, Int8SoftmaxOp);

namespace {

void Int8AddSchema(OpSchema& schema) {
  schema.NumInputs(2)
      .NumOutputs(1)
      .AllowInplace({{0, 0}, {1, 0}})
      .Apply(int8::OutputQuantizationArgs)
      .Input(0, "A", "Int8 (uint8)")
      .Input(1, "B", "Int8 (uint8) of A's shape")
      .Output(0, "C", "Int8 (uint8) of A's shape");
}

void Int8SumSchema(OpSchema& schema) {
  schema.NumInputs(1, 1 << 20)
      .NumOutputs(1)
      .AllowInplace([](int input, int output) { return output == 0 && input >= 0; })
      .Apply(int8::OutputQuantizationArgs)
      .Input(0, "X", "Int8 (uint8) inputs, all of one shape")
      .Output(0, "Y", "Int8 (uint8): their sum");
}

void Int8UnarySchema(OpSchema& schema) {
  schema.NumInputs(1)
      .NumOutputs(1)
      .AllowInplace({{0, 0}})
      .Apply(int8::OutputQuantizationArgs)
      .Input(0, "X", "Int8 (uint8)")
      .Output(0, "Y", "Int8 (uint8) of X's shape");
}

}  // namespace

OPERATOR_SCHEMA(Int8Add).Apply(Int8AddSchema).Doc("Quantized A + B (no broadcast).");
OPERATOR_SCHEMA(Int8AddRelu).Apply(Int8AddSchema).Doc("Quantized max(A + B, 0).");
OPERATOR_SCHEMA(Int8Sum).Apply(Int8SumSchema).Doc("Quantized sum of the inputs.");
OPERATOR_SCHEMA(Int8SumRelu).Apply(Int8SumSchema).Doc("Quantized max(sum of the inputs, 0).");
OPERATOR_SCHEMA(Int8Relu)
    .Apply(Int8UnarySchema)
    .Doc(
        "Quantized max(X, 0); the output keeps X's quantization unless Y_scale/Y_zero_point "
        "are given.");
OPERATOR_SCHEMA(Int8LeakyRelu)
    .Apply(Int8UnarySchema)
    .Arg("alpha", "(float, default 0.01) slope for X < 0")
    .Doc("Quantized LeakyRelu: X for X >= 0, alpha X below.");
OPERATOR_SCHEMA(Int8Sigmoid)
    .Apply(Int8UnarySchema)
    .Doc(
        "Quantized 1 / (1 + exp(-X)); output quantization by default scale 1/256, zero point "
        "0 (Caffe2's).");
OPERATOR_SCHEMA(Int8Softmax)
    .Apply(Int8UnarySchema)
    .Arg("axis", "(int, default 1) softmax over the dims from axis on (Caffe2: all but the first)")
    .Doc(
        "Quantized softmax; output quantization by default scale 1/256, zero point 0 "
        "(Caffe2's).");

SHOULD_NOT_DO_GRADIENT(Int8Add, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8AddRelu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Sum, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8SumRelu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Relu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8LeakyRelu, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Sigmoid, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Softmax, int8::kInferenceOnly);

}  // namespace doppio
