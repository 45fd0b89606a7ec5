#include "operators/stop_gradient_op.h"

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

}  // namespace doppio
