#include "operators/loss_scale_op.h"

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {
namespace {

using GradientTypes = TypeList<float, double, float16, bfloat16>;

bool AllFinite(const Operator<CPUContext>& op, int input, const Tensor& grad) {
  bool finite = true;
  DispatchInput(GradientTypes{}, op, input, grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = grad.data<T>();
    for (int64_t i = 0; i < grad.numel() && finite; ++i) finite = std::isfinite(Widened(data[i]));
  });
  return finite;
}

void Unscale(const Operator<CPUContext>& op, int input, float inverse, Tensor* grad) {
  DispatchInput(GradientTypes{}, op, input, grad->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* data = grad->mutable_data<T>();
    for (int64_t i = 0; i < grad->numel(); ++i) data[i] = Narrowed<T>(Widened(data[i]) * inverse);
  });
}

Tensor* BoolScalar(Tensor* out, bool value) {
  out->Resize({1});
  *out->mutable_data<bool>() = value;
  return out;
}

}  // namespace

void UnscaleGradientsOp::RunOnDevice() {
  const int n = InputSize() - 1;
  const double scale = ReadScalar(*this, n, Input(n), "the loss scale");
  DOPPIO_ENFORCE(scale > 0 && std::isfinite(scale), "the loss scale '", input_name(n),
                 "' must be positive and finite, not ", scale);
  bool finite = true;
  for (int i = 0; i < n && finite; ++i) finite = AllFinite(*this, i, Input(i));
  if (finite) {
    const float inverse = static_cast<float>(1.0 / scale);
    for (int i = 0; i < n; ++i) Unscale(*this, i, inverse, Output(i));
  }
  BoolScalar(Output(n), finite);
}

UpdateLossScaleOp::UpdateLossScaleOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      growth_factor_(GetSingleArgument<float>("growth_factor", 2.0f)),
      backoff_factor_(GetSingleArgument<float>("backoff_factor", 0.5f)),
      growth_interval_(GetSingleArgument<int64_t>("growth_interval", 2000)) {
  DOPPIO_ENFORCE(growth_factor_ >= 1.0f, "growth_factor must be >= 1, not ", growth_factor_);
  DOPPIO_ENFORCE(backoff_factor_ > 0.0f && backoff_factor_ < 1.0f,
                 "backoff_factor must be in (0, 1), not ", backoff_factor_);
  DOPPIO_ENFORCE(growth_interval_ >= 1, "growth_interval must be >= 1, not ", growth_interval_);
}

void UpdateLossScaleOp::RunOnDevice() {
  const Tensor& finite = Input(0);
  DOPPIO_ENFORCE(finite.dtype() == DataType::kBool && finite.numel() == 1, "input 0 ('",
                 input_name(0), "') must be one bool, not ", finite.DebugString());
  const Tensor& scale = Input(1);
  DOPPIO_ENFORCE(scale.dtype() == DataType::kFloat && scale.numel() == 1, "input 1 ('",
                 input_name(1), "') must be one float32, not ", scale.DebugString());
  const int64_t good = ReadIteration(*this, 2, Input(2));
  const int64_t skipped = ReadIteration(*this, 3, Input(3));
  float new_scale = *scale.data<float>();
  int64_t new_good = good + 1;
  int64_t new_skipped = skipped;
  if (!*finite.data<bool>()) {
    new_scale *= backoff_factor_;
    new_good = 0;
    new_skipped += 1;
  } else if (new_good >= growth_interval_) {
    // Growth that would overflow float32 is not taken.
    const float grown = new_scale * growth_factor_;
    if (std::isfinite(grown)) new_scale = grown;
    new_good = 0;
  }
  *Output(0)->mutable_data<float>() = new_scale;
  *Output(1)->mutable_data<int64_t>() = new_good;
  *Output(2)->mutable_data<int64_t>() = new_skipped;
}

REGISTER_CPU_OPERATOR(UnscaleGradients, UnscaleGradientsOp);
REGISTER_CPU_OPERATOR(UpdateLossScale, UpdateLossScaleOp);

OPERATOR_SCHEMA(UnscaleGradients)
    .NumInputsOutputs([](int in, int out) { return in >= 2 && out == in; })
    .AllowInplace([](int input, int output) { return input == output; })
    .Input(0, "grad", "the gradients g_1 .. g_n (float32, float64, float16 or bfloat16), "
                      "then the loss scale (one float)")
    .Output(0, "grad", "the gradients divided by the scale when all are finite, in place; "
                       "then `finite`, one bool")
    .Doc("Checks that every element of the loss-scaled gradients is finite and, if so, "
         "divides them by the loss scale. The last output says which: the condition of the "
         "If that runs the parameter updates.");

OPERATOR_SCHEMA(UpdateLossScale)
    .NumInputs(4)
    .NumOutputs(3)
    .EnforceInplace({{1, 0}, {2, 1}, {3, 2}})
    .Arg("growth_factor", "(float, default 2) scale multiplier after growth_interval good steps")
    .Arg("backoff_factor", "(float, default 0.5) scale multiplier after a non-finite step")
    .Arg("growth_interval", "(int, default 2000) good steps in a row before the scale grows")
    .Input(0, "finite", "one bool: UnscaleGradients' verdict on this step")
    .Input(1, "scale", "the loss scale, one float32")
    .Input(2, "good_steps", "int64: finite steps since the scale last changed")
    .Input(3, "skipped_steps", "int64: steps skipped for non-finite gradients so far")
    .Output(0, "scale", "the new scale (in place)")
    .Output(1, "good_steps", "(in place)")
    .Output(2, "skipped_steps", "(in place)")
    .Doc("Dynamic loss scaling's schedule, as PyTorch's GradScaler.update: backs off on an "
         "overflow, grows after a run of good steps.");

SHOULD_NOT_DO_GRADIENT(UnscaleGradients, "it runs after backward, on the gradients");
SHOULD_NOT_DO_GRADIENT(UpdateLossScale, "it updates the loss scale, not part of the model");

}  // namespace doppio
