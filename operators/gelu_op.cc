// Gelu and GeluGradient, Caffe2's ops: Y = X * Phi(X), Phi the standard
// normal CDF, exactly (0.5 (1 + erf(X / sqrt 2))) or with fast_gelu = 1 by
// the tanh approximation. ONNX graphs exported from torch spell the exact
// form as Div -> Erf -> Add -> Mul -> Mul; the ONNX import turns that chain
// back into Gelu (doppio/onnx/patterns.py).
//
// Float32 forwards of 4,096+ elements run on oneDNN's gelu kernels; the rest
// and the gradient on the loops here, split over the intra-op threads
// (pointwise, so any split gives the same bits).
#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/dnnl_eltwise.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kTanhCubic = 0.044715;

template <typename T>
T GeluValue(T x, bool fast) {
  if (fast) {
    const T inner = T(kSqrt2OverPi) * (x + T(kTanhCubic) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
  return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
}

template <typename T>
T GeluDerivative(T x, bool fast) {
  if (fast) {
    const T inner = T(kSqrt2OverPi) * (x + T(kTanhCubic) * x * x * x);
    const T t = std::tanh(inner);
    const T inner_slope = T(kSqrt2OverPi) * (T(1) + T(3 * kTanhCubic) * x * x);
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * inner_slope;
  }
  // Phi(x) + x phi(x)
  return T(0.5) * (T(1) + std::erf(x * T(kInvSqrt2))) +
         x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
}

class GeluOp final : public Operator<CPUContext> {
 public:
  GeluOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), fast_(GetSingleArgument<bool>("fast_gelu", false)) {}
  EltwiseFn Dnnl() const {
    return {fast_ ? EltwiseAlgorithm::kGeluTanh : EltwiseAlgorithm::kGeluErf};
  }

  void RunOnDevice() override {
    activation::PointwiseForward(*this, Input(0), Output(0),
                                 [this](auto v) { return GeluValue(v, fast_); });
  }

 private:
  bool fast_;
};

// Caffe2's order: inputs (dY, X), output dX.
class GeluGradientOp final : public Operator<CPUContext> {
 public:
  GeluGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace), fast_(GetSingleArgument<bool>("fast_gelu", false)) {}

  void RunOnDevice() override {
    const Tensor& dY = Input(0);
    const Tensor& X = Input(1);
    DOPPIO_ENFORCE(dY.dims() == X.dims(), "gradient '", input_name(0), "' has shape ", dY.dims(),
                   " but '", input_name(1), "' has shape ", X.dims());
    EnforceSameType(*this, 0, dY, 1, X);
    DispatchInput(FloatTypes{}, *this, 1, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* dy = dY.data<T>();
      const T* x = X.data<T>();
      Tensor* dX = Output(0);
      dX->Resize(X.dims());
      T* dx = dX->mutable_data<T>();
      // Element i of dY is read before dx[i] is written: in place is safe.
      ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * GeluDerivative(x[i], fast_);
      });
    });
  }

 private:
  bool fast_;
};

class GetGeluGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op Gelu: cannot differentiate Gelu computed in place over '",
                   O(0), "': its gradient reads the input");
    return SingleGradientDef("GeluGradient", "", {GO(0), I(0)}, {GI(0)}, Def().arg());
  }
};

constexpr const char kFastDoc[] =
    "(bool, default 0) 1: the tanh approximation 0.5 X (1 + tanh(sqrt(2 / pi) (X + 0.044715 "
    "X^3))); 0: the exact 0.5 X (1 + erf(X / sqrt 2))";

}  // namespace

REGISTER_CPU_OPERATOR(Gelu, GeluOp);
REGISTER_CPU_OPERATOR(GeluGradient, GeluGradientOp);
REGISTER_GRADIENT(Gelu, GetGeluGradient);
SHOULD_NOT_DO_GRADIENT(GeluGradient, activation::kSecondOrder);

// In place is for inference nets: GeluGradient reads X.
OPERATOR_SCHEMA(Gelu)
    .Apply(activation::ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(8))
    .Arg("fast_gelu", kFastDoc)
    .Doc("Gaussian error linear unit: Y = X * Phi(X), Phi the standard normal CDF.");
OPERATOR_SCHEMA(GeluGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("fast_gelu", kFastDoc)
    .Input(0, "dY", "gradient of Gelu's output")
    .Input(1, "X", "Gelu's input")
    .Output(0, "dX", "gradient of X; may be dY")
    .Doc("Gradient of Gelu: dX = dY * (Phi(X) + X phi(X)), or the tanh form's derivative.");

}  // namespace doppio
