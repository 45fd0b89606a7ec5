#include "operators/pow_op.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_binary_op.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

PowOp::PowOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      has_exponent_argument_(HasArgument("exponent")),
      exponent_(GetSingleArgument<float>("exponent", 0.0f)),
      args_(ReadBroadcastArgs(*this)) {
  if (InputSize() == 1) {
    DOPPIO_ENFORCE(has_exponent_argument_,
                   "give the exponent as argument 'exponent' or as a second input");
  } else {
    DOPPIO_ENFORCE(!has_exponent_argument_, "the exponent is input '", input_name(1),
                   "'; do not also pass argument 'exponent'");
  }
}

void PowOp::RunOnDevice() {
  if (InputSize() == 1) {
    RunWithScalarExponent();
  } else {
    RunWithTensorExponent();
  }
}

void PowOp::RunWithScalarExponent() {
  const Tensor& X = Input(0);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    T* y = Y->mutable_data<T>();
    const T exponent = static_cast<T>(exponent_);
    const int64_t count = X.numel();
    if (exponent == T(2)) {
      // The common square, exactly.
      for (int64_t i = 0; i < count; ++i) y[i] = x[i] * x[i];
    } else {
      for (int64_t i = 0; i < count; ++i) y[i] = std::pow(x[i], exponent);
    }
  });
}

void PowOp::RunWithTensorExponent() {
  const Tensor& X = Input(0);
  const Tensor& E = Input(1);
  EnforceSameType(*this, 0, X, 1, E);
  if (!args_.legacy) {
    // Caffe2's rule: without broadcast=1 the exponent has X's shape.
    DOPPIO_ENFORCE(X.dims() == E.dims(), "exponent '", input_name(1), "' has shape ", E.dims(),
                   " but '", input_name(0), "' has shape ", X.dims(),
                   "; pass broadcast=1 to broadcast the exponent");
  }
  const BroadcastPlan plan = PlanBinaryOutput(*this, args_, X, E);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* e = E.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(plan.output_dims);
    BroadcastBinary(plan, x, e, Y->mutable_data<T>(),
                    [](T base, T power) { return std::pow(base, power); });
  });
}

REGISTER_CPU_OPERATOR(Pow, PowOp);

OPERATOR_SCHEMA(Pow)
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}, {1, 0}})
    .IdenticalTypeAndShape()
    .Arg("exponent", "(float) the exponent; not with a second input")
    .Arg("broadcast",
         "(int, default 0) 1 lets the exponent tensor be a scalar or match a "
         "contiguous run of X's dims starting at `axis` (Caffe2's legacy rule)")
    .Arg("axis", "(int, default -1) with broadcast=1, the dim of X where the exponent's dims start")
    .Arg("axis_str", "(string) with broadcast=1, the axis as a letter of `order`")
    .Arg("order", "(string, default NCHW) the layout axis_str refers to")
    .Input(0, "X", "base (float32 or float64)")
    .Input(1, "exponent", "(optional) exponents, of X's type")
    .Output(0, "Y", "X ^ exponent, of X's shape")
    .Doc("Elementwise power. As in numpy, a negative base with a non-integer "
         "exponent gives nan.");

namespace {

class GetPowGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;

  static OperatorDef Op(const std::string& type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::vector<Argument>& args = {}) {
    OperatorDef op = SingleGradientDef(type, "", inputs, outputs)[0];
    for (const Argument& arg : args) *op.add_arg() = arg;
    return op;
  }
  static Argument FloatArgument(const std::string& name, float value) {
    Argument arg;
    arg.set_name(name);
    arg.set_f(value);
    return arg;
  }

  std::vector<OperatorDef> GetGradientDefs() override {
    if (Def().input_size() == 1) return ScalarExponentGradient();
    return TensorExponentGradient();
  }

  // dX = e * X^(e-1) * dY.
  std::vector<OperatorDef> ScalarExponentGradient() {
    const float exponent = ArgumentHelper(Def()).GetSingle<float>("exponent", 0.0f);
    float power = exponent - 1;
    if (I(0) == O(0)) {
      // X was overwritten by Y = X^e, and Y^((e-1)/e) = X^(e-1) for X > 0.
      DOPPIO_ENFORCE(std::fabs(exponent) > 1e-12f, "op Pow: cannot differentiate in-place "
                     "Pow with exponent 0 over '", O(0), "'");
      power = (exponent - 1) / exponent;
    }
    // X^(e-1) goes to its own blob: in place, GI(0) and GO(0) share a name
    // and dY must survive until the Mul reads it.
    const std::string power_of_x = "_" + GI(0) + "_pow";
    return {Op("Pow", {I(0)}, {power_of_x}, {FloatArgument("exponent", power)}),
            Op("Mul", {power_of_x, GO(0)}, {GI(0)}),
            Op("Scale", {GI(0)}, {GI(0)}, {FloatArgument("scale", exponent)})};
  }

  // dX = E * X^(E-1) * dY and dE = log(X) * Y * dY, reduced to E's shape
  // when E was broadcast.
  std::vector<OperatorDef> TensorExponentGradient() {
    DOPPIO_ENFORCE(I(0) != O(0) && I(1) != O(0), "op Pow: cannot differentiate Pow "
                   "computed in place over '", O(0), "': its gradient needs both inputs");
    std::vector<Argument> broadcast_args, axis_args;
    for (const Argument& arg : Def().arg()) {
      if (arg.name() == "broadcast") broadcast_args.push_back(arg);
      if (arg.name() == "axis" || arg.name() == "axis_str" || arg.name() == "order") {
        broadcast_args.push_back(arg);
        axis_args.push_back(arg);
      }
    }
    const bool legacy = ArgumentHelper(Def()).GetSingle<bool>("broadcast", false);
    const std::string parts = GI(1) + "_autogen_pre_red";
    std::vector<OperatorDef> ops = {
        // Ones in E's own dtype (ConstantFill would make float32): E^0.
        Op("Pow", {I(1)}, {GI(1)}, {FloatArgument("exponent", 0.0f)}),
        Op("Sub", {I(1), GI(1)}, {GI(1)}),
        Op("Pow", {I(0), GI(1)}, {GI(0)}, broadcast_args),
        Op("Mul", {GI(0), GO(0)}, {GI(0)}),
        Op("Mul", {GI(0), I(1)}, {GI(0)}, broadcast_args),
        Op("Log", {I(0)}, {parts}),
        Op("Mul", {parts, O(0)}, {parts}),
    };
    if (legacy) {
      ops.push_back(Op("Mul", {parts, GO(0)}, {parts}));
      ops.push_back(Op("SumReduceLike", {parts, I(1)}, {GI(1)}, axis_args));
    } else {
      ops.push_back(Op("Mul", {parts, GO(0)}, {GI(1)}));
    }
    return ops;
  }
};

}  // namespace

REGISTER_GRADIENT(Pow, GetPowGradient);

}  // namespace doppio
