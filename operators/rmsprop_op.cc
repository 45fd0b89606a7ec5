#include "operators/rmsprop_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {

RmsPropOp::RmsPropOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      decay_(GetSingleArgument<float>("decay", 0.9f)),
      momentum_(GetSingleArgument<float>("momentum", 0.0f)),
      epsilon_(GetSingleArgument<float>("epsilon", 1e-5f)) {}

void RmsPropOp::RunOnDevice() {
  const Tensor& grad = Input(0);
  const Tensor& mean_squares = Input(1);
  const Tensor& mom = Input(2);
  EnforceSameSizeAndType(*this, 0, grad, 1, mean_squares);
  EnforceSameSizeAndType(*this, 0, grad, 2, mom);
  const double lr = ReadLearningRate(*this, 3, Input(3));
  const double decay = decay_, momentum = momentum_, epsilon = epsilon_;

  DispatchTypes(FloatTypes{}, input_name(0), grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = grad.data<T>();
    const T* ms = mean_squares.data<T>();
    const T* m = mom.data<T>();
    Tensor* outputs[3] = {Output(0), Output(1), Output(2)};
    outputs[0]->Resize(grad.dims());
    outputs[1]->Resize(mean_squares.dims());
    outputs[2]->Resize(mom.dims());
    T* new_g = outputs[0]->mutable_data<T>();
    T* new_ms = outputs[1]->mutable_data<T>();
    T* new_m = outputs[2]->mutable_data<T>();
    for (int64_t i = 0; i < grad.numel(); ++i) {
      const double gi = g[i];
      const double square = ms[i] + (1.0 - decay) * (gi * gi - ms[i]);
      const double step = momentum * m[i] + lr * gi / std::sqrt(epsilon + square);
      new_ms[i] = static_cast<T>(square);
      new_m[i] = static_cast<T>(step);
      new_g[i] = static_cast<T>(step);
    }
  });
}

REGISTER_CPU_OPERATOR(RmsProp, RmsPropOp);

OPERATOR_SCHEMA(RmsProp)
    .Elementwise()
    .NumInputs(4)
    .NumOutputs(3)
    .AllowInplace({{0, 0}, {1, 1}, {2, 2}})
    .Arg("decay", "(float, default 0.9) decay of the mean square")
    .Arg("momentum", "(float, default 0) momentum of the step")
    .Arg("epsilon", "(float, default 1e-5) added to the mean square under the root")
    .Input(0, "grad", "gradient, float32 or float64")
    .Input(1, "mean_squares", "running mean of g^2, grad's size and type")
    .Input(2, "mom", "momentum history, grad's size and type")
    .Input(3, "lr", "learning rate, one element")
    .Output(0, "output_grad", "the step (= output_mom)")
    .Output(1, "output_mean_squares", "ms + (1 - decay) * (g^2 - ms)")
    .Output(2, "output_mom", "momentum * mom + lr * g / sqrt(epsilon + ms')")
    .Doc("RMSProp step: returns (mom', ms', mom') without updating the parameter.");

SHOULD_NOT_DO_GRADIENT(RmsProp, "it is a parameter update, not part of the model");

}  // namespace doppio
