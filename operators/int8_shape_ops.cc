#include "operators/int8_shape_ops.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/parallel_for.h"

namespace doppio {
namespace {

struct TwinSpec {
  std::string type;
  int outputs;
};

TwinSpec TwinOf(const std::string& int8_type) {
  static const std::map<std::string, TwinSpec> kTwins = {
      {"Int8Reshape", {"Reshape", 2}}, {"Int8Flatten", {"Flatten", 1}},
      {"Int8Slice", {"Slice", 1}},     {"Int8Transpose", {"Transpose", 1}},
      {"Int8Concat", {"Concat", 2}},   {"Int8ResizeNearest", {"ResizeNearest", 1}},
  };
  return kTwins.at(int8_type);
}

// Caffe2's Int8Concat axis: `axis`, defaulting to C of `order` (NHWC 3,
// NCHW 1) or, without an order, to 0.
int64_t Int8ConcatAxis(const OperatorBase& op) {
  const std::string order = op.GetSingleArgument<std::string>("order", "");
  const int64_t fallback = order == "NHWC" ? 3 : (order == "NCHW" ? 1 : 0);
  return op.GetSingleArgument<int64_t>("axis", fallback);
}

std::vector<Argument> TwinArguments(const OperatorBase& op) {
  if (op.type() == "Int8Concat") return {IntArgument("axis", Int8ConcatAxis(op))};
  if (op.type() == "Int8ResizeNearest") {
    Argument order;
    order.set_name("order");
    order.set_s("NHWC");
    return {order};
  }
  return {};
}

}  // namespace

Int8MoveOp::Int8MoveOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), float_twin_(def.type() == "Int8ResizeNearest") {
  const TwinSpec spec = TwinOf(def.type());
  // The Int8 concat axis replaces Concat's own reading of `order`.
  twin_ = std::make_unique<TwinOp>(spec.type, def, def.input_size(), spec.outputs,
                                   TwinArguments(*this), std::set<std::string>{"order"});
  requantized_.resize(def.input_size());
}

void Int8MoveOp::FeedTwin(const int8::Quantization* common) {
  for (int i = 0; i < InputSize(); ++i) {
    Tensor* in = twin_->input(i);
    if (!InputBlob(i).IsType<int8::Int8TensorCPU>()) {
      in->ShareData(Input(i));  // shapes, bounds: plain tensors
      continue;
    }
    const int8::Int8TensorCPU& X = int8::Int8Input(*this, i);
    if (float_twin_) {
      in->Resize(X.t.dims());
      int8::Dequantize(X.t.data<uint8_t>(), X.t.numel(), {1.0f, 0}, in->mutable_data<float>());
    } else if (common != nullptr &&
               (X.scale != common->scale || X.zero_point != common->zero_point)) {
      requantized_[i].Resize(X.t.dims());
      int8::Requantize(X.t.data<uint8_t>(), X.t.numel(), int8::QuantizationOf(X), *common,
                       requantized_[i].mutable_data<uint8_t>());
      in->ShareData(requantized_[i]);
    } else {
      in->ShareData(X.t);
    }
  }
}

void Int8MoveOp::RunOnDevice() {
  const int8::Quantization xq = int8::QuantizationOf(int8::Int8Input(*this, 0));
  const int8::Quantization yq = int8::OutputQuantizationOr(*this, xq);
  const bool joins = type() == "Int8Concat";
  FeedTwin(joins ? &yq : nullptr);
  twin_->Run();
  const Tensor& out = twin_->output(0);
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, yq, out.dims());
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  const int64_t n = out.numel();
  if (float_twin_) {
    // The twin copied values; they come back as the integers they were.
    const float* v = out.data<float>();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(v[i]);
    int8::Requantize(y, n, xq, yq, y);
  } else {
    int8::Requantize(out.data<uint8_t>(), n, joins ? yq : xq, yq, y);
  }
  for (int i = 1; i < OutputSize(); ++i) Output(i)->CopyFrom(twin_->output(i));
}

Int8ChannelShuffleOp::Int8ChannelShuffleOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), group_(GetSingleArgument<int64_t>("group", 1)) {
  DOPPIO_ENFORCE(group_ > 0, "group ", group_, " must be positive");
  const std::string order = GetSingleArgument<std::string>("order", "NHWC");
  DOPPIO_ENFORCE(order == "NHWC", "Int8ChannelShuffle takes NHWC tensors (as Caffe2's), not ",
                 order);
}

void Int8ChannelShuffleOp::RunOnDevice() {
  const int8::Int8TensorCPU& X = int8::Int8Input(*this, 0);
  DOPPIO_ENFORCE(X.t.ndim() >= 1 && X.t.dim(-1) % group_ == 0, "X '", input_name(0), "' (",
                 X.t.dims(), ") must have channels (last dim) divisible by group ", group_);
  DOPPIO_ENFORCE(!IsInputOutputAlias(0, 0), "Int8ChannelShuffle cannot work in place");
  const int8::Quantization xq = int8::QuantizationOf(X);
  const int8::Quantization yq = int8::OutputQuantizationOr(*this, xq);
  const int64_t C = X.t.dim(-1), K = C / group_;
  const uint8_t* x = X.t.data<uint8_t>();
  int8::Int8TensorCPU* Y = int8::Int8Output(this, 0, yq, X.t.dims());
  uint8_t* y = Y->t.mutable_data<uint8_t>();
  const int64_t pixels = C > 0 ? X.t.numel() / C : 0;
  ParallelFor(
      pixels,
      [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          for (int64_t g = 0; g < group_; ++g) {
            for (int64_t k = 0; k < K; ++k) y[p * C + k * group_ + g] = x[p * C + g * K + k];
          }
        }
      },
      RowsPerThread(C));
  int8::Requantize(y, Y->t.numel(), xq, yq, y);
}

REGISTER_CPU_OPERATOR(Int8Reshape, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8Flatten, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8Slice, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8Transpose, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8Concat, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8ResizeNearest, Int8MoveOp);
REGISTER_CPU_OPERATOR(Int8ChannelShuffle, Int8ChannelShuffleOp);

namespace {

void KeepsQuantization(OpSchema& schema) {
  schema.Arg("Y_scale", "(float) output scale; default the input's")
      .Arg("Y_zero_point", "(int) output zero point; default the input's");
}

}  // namespace

OPERATOR_SCHEMA(Int8Reshape)
    .NumInputs(1, 2)
    .NumOutputs(2)
    .AllowInplace({{0, 0}})
    .Apply(KeepsQuantization)
    .Arg("shape", "(ints) the new shape (0 copies the input's dim, one -1 is inferred)")
    .Input(0, "data", "Int8 (uint8)")
    .Input(1, "new_shape", "optional int64 [k]: the new shape (instead of the argument)")
    .Output(0, "reshaped", "Int8 (uint8): data in the new shape")
    .Output(1, "old_shape", "int64: data's shape")
    .Doc("Quantized Reshape (as Reshape).");
OPERATOR_SCHEMA(Int8Flatten)
    .NumInputs(1)
    .NumOutputs(1)
    .Apply(KeepsQuantization)
    .Arg("axis", "(int, default 1) dims before it become the rows, the rest the columns")
    .Input(0, "X", "Int8 (uint8)")
    .Output(0, "Y", "Int8 (uint8) 2-D")
    .Doc("Quantized Flatten (as Flatten).");
OPERATOR_SCHEMA(Int8Slice)
    .NumInputs({1, 3})
    .NumOutputs(1)
    .Apply(KeepsQuantization)
    .Arg("starts", "(ints) first index per dim; negative counts from the end")
    .Arg("ends", "(ints) end per dim (exclusive); -1 is the end of the dim")
    .Input(0, "data", "Int8 (uint8)")
    .Input(1, "starts", "optional int [k] (instead of the argument)")
    .Input(2, "ends", "optional int [k] (instead of the argument)")
    .Output(0, "output", "Int8 (uint8): the block")
    .Doc("Quantized Slice (as Slice).");
OPERATOR_SCHEMA(Int8Transpose)
    .NumInputs(1)
    .NumOutputs(1)
    .Apply(KeepsQuantization)
    .Arg("axes", "(ints, default reversed) Y.dims[i] = X.dims[axes[i]]")
    .Input(0, "X", "Int8 (uint8)")
    .Output(0, "Y", "Int8 (uint8), X's dims permuted")
    .Doc("Quantized Transpose (as Transpose).");
OPERATOR_SCHEMA(Int8Concat)
    .NumInputs(1, 1 << 20)
    .NumOutputs(1, 2)
    .Apply(KeepsQuantization)
    .Arg("axis", "(int) the axis to join; default C of `order` (NHWC 3, NCHW 1), else 0")
    .Arg("order", "(string) NHWC or NCHW, for the default axis")
    .Input(0, "X", "Int8 (uint8) inputs, equal but along the axis")
    .Output(0, "Y", "Int8 (uint8), requantized into Y_scale / Y_zero_point (default input 0's)")
    .Output(1, "split_info", "int32: each input's size along the axis")
    .Doc("Quantized Concat.");
OPERATOR_SCHEMA(Int8ResizeNearest)
    .NumInputs(1)
    .NumOutputs(1)
    .Apply(KeepsQuantization)
    .Arg("width_scale", "(float, default 1) output width = int(W * width_scale)")
    .Arg("height_scale", "(float, default 1) output height = int(H * height_scale)")
    .Input(0, "X", "Int8 [N, H, W, C] (uint8)")
    .Output(0, "Y", "Int8 [N, oH, oW, C] (uint8)")
    .Doc("Quantized nearest-neighbour resize, NHWC (as ResizeNearest).");
OPERATOR_SCHEMA(Int8ChannelShuffle)
    .NumInputs(1)
    .NumOutputs(1)
    .Apply(KeepsQuantization)
    .Arg("group", "(int, default 1) channel groups; channel g K + k goes to k G + g")
    .Arg("order", "(string, default NHWC) must be NHWC")
    .Input(0, "X", "Int8 [..., C] (uint8), C divisible by group")
    .Output(0, "Y", "Int8 (uint8) of X's shape")
    .Doc("Quantized ChannelShuffle (ShuffleNet), NHWC.");

SHOULD_NOT_DO_GRADIENT(Int8Reshape, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Flatten, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Slice, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Transpose, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8Concat, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8ResizeNearest, int8::kInferenceOnly);
SHOULD_NOT_DO_GRADIENT(Int8ChannelShuffle, int8::kInferenceOnly);

}  // namespace doppio
