#include "operators/order_switch_ops.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/transpose_op.h"

namespace doppio {

namespace {

// The permutation of `ndim` dims the op applies.
std::vector<int> OrderSwitchAxes(const std::string& op_type, int ndim) {
  std::vector<int> axes = {0};
  if (op_type == "NCHW2NHWC") {
    for (int i = 2; i < ndim; ++i) axes.push_back(i);
    axes.push_back(1);
  } else {
    axes.push_back(ndim - 1);
    for (int i = 1; i < ndim - 1; ++i) axes.push_back(i);
  }
  return axes;
}

}  // namespace

void OrderSwitchOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.ndim() >= 3, "'", input_name(0),
                 "' must have rank >= 3 (batch, channels and spatial dims), not shape ", X.dims());
  PermuteTensor(X, OrderSwitchAxes(type(), X.ndim()), Output(0));
}

REGISTER_CPU_OPERATOR(NCHW2NHWC, OrderSwitchOp);
REGISTER_CPU_OPERATOR(NHWC2NCHW, OrderSwitchOp);

namespace {

std::vector<TensorShape> OrderSwitchInference(const OperatorDef& def,
                                              const std::vector<TensorShape>& in) {
  const auto& dims = in.at(0).dims();
  DOPPIO_ENFORCE(dims.size() >= 3, "op ", def.type(), ": the input must have rank >= 3");
  TensorShape out;
  out.set_data_type(in[0].data_type());
  for (int axis : OrderSwitchAxes(def.type(), dims.size())) out.add_dims(dims[axis]);
  return {out};
}

class GetOrderSwitchGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const std::string inverse = Def().type() == "NCHW2NHWC" ? "NHWC2NCHW" : "NCHW2NHWC";
    return SingleGradientDef(inverse, "", {GO(0)}, {GI(0)});
  }
};

}  // namespace

OPERATOR_SCHEMA(NCHW2NHWC)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(OrderSwitchInference)
    .Input(0, "data", "tensor in NCHW order (rank >= 3, any type)")
    .Output(0, "output", "the same tensor in NHWC order")
    .Doc("Moves the channel dim (1) to the end: NC... -> N...C.");
OPERATOR_SCHEMA(NHWC2NCHW)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction(OrderSwitchInference)
    .Input(0, "data", "tensor in NHWC order (rank >= 3, any type)")
    .Output(0, "output", "the same tensor in NCHW order")
    .Doc("Moves the channel dim from the end to position 1: N...C -> NC....");

REGISTER_GRADIENT(NCHW2NHWC, GetOrderSwitchGradient);
REGISTER_GRADIENT(NHWC2NCHW, GetOrderSwitchGradient);

}  // namespace doppio
