#include "operators/stop_gradient_op.h"

#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

void StopGradientOp::RunOnDevice() {
  if (!IsInputOutputAlias(0, 0)) Output(0)->CopyFrom(Input(0));
}

REGISTER_CPU_OPERATOR(StopGradient, StopGradientOp);

OPERATOR_SCHEMA(StopGradient)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "input", "tensor of any type")
    .Output(0, "output", "the input (a copy unless in place)")
    .Doc("Identity that blocks gradients: nothing upstream of it is trained "
         "through it.");

NO_GRADIENT(StopGradient, "it exists to block the gradient: its input gets none");

REGISTER_CPU_OPERATOR(ZeroGradient, ZeroGradientOp);

OPERATOR_SCHEMA(ZeroGradient)
    .NumInputs(1)
    .NumOutputs(0)
    .Input(0, "input", "the tensor that gets a zero gradient")
    .Doc(
        "Does nothing in the forward pass; in the backward pass its input gets a gradient of "
        "zeros of its shape (Caffe2's ZeroGradient).");

namespace {

class GetZeroGradientGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    Argument value;
    value.set_name("value");
    value.set_f(0.0f);
    google::protobuf::RepeatedPtrField<Argument> args;
    *args.Add() = value;
    return SingleGradientDef("ConstantFill", "", {I(0)}, {GI(0)}, args);
  }
};

}  // namespace

REGISTER_GRADIENT(ZeroGradient, GetZeroGradientGradient);

}  // namespace doppio
