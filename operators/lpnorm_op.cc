#include "operators/lpnorm_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {

namespace {

int ReadP(const OperatorBase& op) {
  const int p = op.GetSingleArgument<int>("p", 2);
  DOPPIO_ENFORCE(p == 1 || p == 2, "argument p must be 1 or 2, got ", p);
  return p;
}

// What the sum is divided by: numel when averaging, else 1.
double Divisor(const OperatorBase& op, bool average, const Tensor& x) {
  if (!average) return 1.0;
  DOPPIO_ENFORCE(x.numel() > 0, "'", op.input_name(0),
                 "' is empty, so its average norm is undefined");
  return static_cast<double>(x.numel());
}

}  // namespace

LpNormOp::LpNormOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      p_(ReadP(*this)),
      average_(GetSingleArgument<bool>("average", false)) {}

void LpNormOp::RunOnDevice() {
  const Tensor& x = Input(0);
  const double divisor = Divisor(*this, average_, x);
  DispatchTypes(FloatTypes{}, input_name(0), x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = x.data<T>();
    double sum = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = data[i];
      sum += p_ == 1 ? std::abs(v) : v * v;
    }
    Tensor* norm = Output(0);
    norm->Resize({1});
    norm->mutable_data<T>()[0] = static_cast<T>(sum / divisor);
  });
}

LpNormGradientOp::LpNormGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      p_(ReadP(*this)),
      average_(GetSingleArgument<bool>("average", false)) {}

void LpNormGradientOp::RunOnDevice() {
  const Tensor& x = Input(0);
  const double divisor = Divisor(*this, average_, x);
  const double scale = ReadScalar(*this, 1, Input(1), "the norm's gradient") / divisor;
  DispatchTypes(FloatTypes{}, input_name(0), x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = x.data<T>();
    Tensor* dx = Output(0);
    dx->Resize(x.dims());
    T* grad = dx->mutable_data<T>();
    // |x| has no derivative at 0; like Caffe2, values within 1e-12 of 0 get 0.
    constexpr double kEps = 1e-12;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = data[i];
      const double sign = v > kEps ? 1.0 : (v < -kEps ? -1.0 : 0.0);
      grad[i] = static_cast<T>((p_ == 1 ? sign : 2.0 * v) * scale);
    }
  });
}

REGISTER_CPU_OPERATOR(LpNorm, LpNormOp);
REGISTER_CPU_OPERATOR(LpNormGradient, LpNormGradientOp);

OPERATOR_SCHEMA(LpNorm)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.add_dims(1);
      out.set_data_type(in[0].data_type());
      return std::vector<TensorShape>{out};
    })
    .Arg("p", "(int, default 2) 1: sum |x|; 2: sum x^2 (no square root)")
    .Arg("average", "(bool, default false) divide by the number of elements")
    .Input(0, "X", "float32 or float64 tensor")
    .Output(0, "Z", "one element of X's type")
    .Doc("Z = sum_i |x_i|^p for p in {1, 2} (no root), / numel(X) if average.");

OPERATOR_SCHEMA(LpNormGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("p", "(int, default 2) as in LpNorm")
    .Arg("average", "(bool, default false) as in LpNorm")
    .Input(0, "X", "LpNorm's input")
    .Input(1, "dout", "gradient of LpNorm's output, one element")
    .Output(0, "dx", "p = 1: sign(x) * dout; p = 2: 2 * x * dout (/ numel if average)")
    .Doc("Gradient of LpNorm.");

namespace {

class GetLpNormGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("LpNormGradient", "", {I(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(LpNorm, GetLpNormGradient);
SHOULD_NOT_DO_GRADIENT(LpNormGradient, "it is itself a gradient op");

}  // namespace doppio
