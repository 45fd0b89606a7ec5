#include "operators/activation_ops.h"

#include <algorithm>
#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_functors.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace activation {

void CheckGradientMatchesOutput(const OperatorBase& op, const Tensor& Y, const Tensor& dY) {
  DOPPIO_ENFORCE(Y.dims() == dY.dims(), "gradient '", op.input_name(1), "' has shape ", dY.dims(),
                 " but the forward output '", op.input_name(0), "' has shape ", Y.dims());
  DOPPIO_ENFORCE(Y.dtype() == dY.dtype(), "'", op.input_name(0), "' holds ",
                 DataTypeName(Y.dtype()), " but '", op.input_name(1), "' holds ",
                 DataTypeName(dY.dtype()));
}

}  // namespace activation

namespace {

// max(x, 0); the gradient passes where y > 0. Relu, Sigmoid and Tanh run
// the functors the CUDA kernels run (elementwise_functors.h).
struct ReluFunctor {
  explicit ReluFunctor(const OperatorBase&) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kRelu}; }
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    functors::CpuUnary(functors::Relu{}, n, x, y);
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    functors::CpuUnaryGradient(functors::ReluGradient{}, n, y, dy, dx);
  }
};

// x for x > 0, alpha * x otherwise (argument alpha, default 0.01).
struct LeakyReluFunctor {
  explicit LeakyReluFunctor(const OperatorBase& op)
      : alpha(op.GetSingleArgument<float>("alpha", 0.01f)) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kRelu, alpha}; }
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : a * x[i];
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    // Caffe2 lets y == 0 through unscaled; a positive alpha keeps the sign of
    // x in y, so y tells the two branches apart.
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] >= T(0) ? dy[i] : a * dy[i];
  }
  float alpha;
};

// 1 / (1 + exp(-x)); dx = dy * y * (1 - y).
struct SigmoidFunctor {
  explicit SigmoidFunctor(const OperatorBase&) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kLogistic}; }
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    functors::CpuUnary(functors::Sigmoid{}, n, x, y);
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    functors::CpuUnaryGradient(functors::SigmoidGradient{}, n, y, dy, dx);
  }
};

// tanh(x); dx = dy * (1 - y^2).
struct TanhFunctor {
  explicit TanhFunctor(const OperatorBase&) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kTanh}; }
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    functors::CpuUnary(functors::Tanh{}, n, x, y);
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    functors::CpuUnaryGradient(functors::TanhGradient{}, n, y, dy, dx);
  }
};

// x for x >= 0, alpha * (exp(x) - 1) otherwise (argument alpha, default 1).
struct EluFunctor {
  explicit EluFunctor(const OperatorBase& op)
      : alpha(op.GetSingleArgument<float>("alpha", 1.0f)) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kElu, alpha}; }
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? a * std::expm1(x[i]) : x[i];
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    // For x < 0, dy/dx = alpha * exp(x) = y + alpha.
    const T a = static_cast<T>(alpha);
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] < T(0) ? dy[i] * (y[i] + a) : dy[i];
  }
  float alpha;
};

// log(1 + exp(x)); dx = dy * (1 - exp(-y)).
struct SoftplusFunctor {
  explicit SoftplusFunctor(const OperatorBase&) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow for large x, no
    // precision loss for very negative x.
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::max(x[i], T(0)) + std::log1p(std::exp(-std::abs(x[i])));
    }
  }
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    // sigmoid(x) = 1 - e^-y; -expm1 keeps it accurate where y is tiny.
    for (int64_t i = 0; i < n; ++i) dx[i] = -std::expm1(-y[i]) * dy[i];
  }
};

// Swish (SiLU): y = x * sigmoid(x). Its gradient needs x as well as y, so
// it has its own ops rather than the (Y, dY) activation templates.
class SwishOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kSwish, 1.f}; }
  void RunOnDevice() override {
    activation::PointwiseForward(*this, Input(0), Output(0), [](auto v) {
      using T = decltype(v);
      return v / (T(1) + std::exp(-v));
    });
  }
};

// dX = dY * (Y + sigmoid(X) * (1 - Y)), from inputs (X, Y, dY).
class SwishGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dY = Input(2);
    for (int slot : {1, 2}) {
      const Tensor& other = Input(slot);
      DOPPIO_ENFORCE(other.dims() == X.dims(), "'", input_name(slot), "' has shape ", other.dims(),
                     " but '", input_name(0), "' has shape ", X.dims());
      EnforceSameType(*this, 0, X, slot, other);
    }
    DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      const T* y = Y.data<T>();
      const T* dy = dY.data<T>();
      // In place over dY is allowed: element i is read before it is written.
      Tensor* dX = Output(0);
      dX->Resize(X.dims());
      T* dx = dX->mutable_data<T>();
      for (int64_t i = 0; i < X.numel(); ++i) {
        const T sigmoid = T(1) / (T(1) + std::exp(-x[i]));
        dx[i] = dy[i] * (y[i] + sigmoid * (T(1) - y[i]));
      }
    });
  }
};

class GetSwishGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op Swish: cannot differentiate Swish computed in place over '",
                   O(0), "': its gradient reads the input");
    return SingleGradientDef("SwishGradient", "", {I(0), O(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

// ---- registration ----

REGISTER_CPU_OPERATOR(Relu, UnaryActivationOp<ReluFunctor>);
REGISTER_CPU_OPERATOR(ReluGradient, ActivationGradientOp<ReluFunctor>);
REGISTER_CPU_OPERATOR(LeakyRelu, UnaryActivationOp<LeakyReluFunctor>);
REGISTER_CPU_OPERATOR(LeakyReluGradient, ActivationGradientOp<LeakyReluFunctor>);
REGISTER_CPU_OPERATOR(Sigmoid, UnaryActivationOp<SigmoidFunctor>);
REGISTER_CPU_OPERATOR(SigmoidGradient, ActivationGradientOp<SigmoidFunctor>);
REGISTER_CPU_OPERATOR(Tanh, UnaryActivationOp<TanhFunctor>);
REGISTER_CPU_OPERATOR(TanhGradient, ActivationGradientOp<TanhFunctor>);
REGISTER_CPU_OPERATOR(Elu, UnaryActivationOp<EluFunctor>);
REGISTER_CPU_OPERATOR(EluGradient, ActivationGradientOp<EluFunctor>);
REGISTER_CPU_OPERATOR(Softplus, UnaryActivationOp<SoftplusFunctor>);
REGISTER_CPU_OPERATOR(SoftplusGradient, ActivationGradientOp<SoftplusFunctor>);
REGISTER_CPU_OPERATOR(Swish, SwishOp);
REGISTER_CPU_OPERATOR(SwishGradient, SwishGradientOp);

namespace activation {

void ForwardSchema(OpSchema& schema) {
  schema.NumInputs(1)
      .NumOutputs(1)
      .AllowInplace({{0, 0}})
      .IdenticalTypeAndShape()
      .Input(0, "X", "input tensor, float32 or float64")
      .Output(0, "Y", "the activation of X, of X's shape and type; may be X");
}

// The parts every (Y, dY) -> dX gradient schema shares.
void GradientSchema(OpSchema& schema) {
  schema.NumInputs(2)
      .NumOutputs(1)
      .AllowInplace({{1, 0}})
      .IdenticalTypeAndShape()
      .Input(0, "Y", "the forward op's output")
      .Input(1, "dY", "gradient of Y")
      .Output(0, "dX", "gradient of the forward input, of Y's shape; may be dY");
}

const char kSecondOrder[] = "it is a gradient op; second derivatives are not supported";

}  // namespace activation

namespace {

using activation::ForwardSchema;
using activation::GradientSchema;
using activation::kSecondOrder;

constexpr const char kLeakyAlphaDoc[] = "(float, default 0.01) slope for negative inputs";
constexpr const char kEluAlphaDoc[] = "(float, default 1.0) scale of the negative branch";

}  // namespace

OPERATOR_SCHEMA(Relu).LowPrecisionInFloat32()
    .Apply(ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(1))
    .Doc("Y = max(X, 0), elementwise.");
OPERATOR_SCHEMA(ReluGradient).LowPrecisionInFloat32()
    .Apply(GradientSchema)
    .CostInferenceFunction(PointwiseCostInference(1))
    .Doc("Gradient of Relu: dX = dY where Y > 0, else 0.");

OPERATOR_SCHEMA(LeakyRelu).LowPrecisionInFloat32()
    .Apply(ForwardSchema)
    .Arg("alpha", kLeakyAlphaDoc)
    .Doc("Y = X where X > 0, alpha * X otherwise.");
OPERATOR_SCHEMA(LeakyReluGradient).LowPrecisionInFloat32()
    .Apply(GradientSchema)
    .Arg("alpha", kLeakyAlphaDoc)
    .Doc("Gradient of LeakyRelu: dX = dY where Y >= 0, alpha * dY otherwise.");

OPERATOR_SCHEMA(Sigmoid).LowPrecisionInFloat32()
    .Apply(ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(4))
    .Doc("Y = 1 / (1 + exp(-X)), elementwise.");
OPERATOR_SCHEMA(SigmoidGradient).LowPrecisionInFloat32()
    .Apply(GradientSchema)
    .Doc("Gradient of Sigmoid: dX = dY * Y * (1 - Y).");

OPERATOR_SCHEMA(Tanh).LowPrecisionInFloat32()
    .Apply(ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(4))
    .Doc("Y = tanh(X), elementwise.");
OPERATOR_SCHEMA(TanhGradient).LowPrecisionInFloat32().Apply(GradientSchema).Doc("Gradient of Tanh: dX = dY * (1 - Y^2).");

OPERATOR_SCHEMA(Elu)
    .Apply(ForwardSchema)
    .Arg("alpha", kEluAlphaDoc)
    .Doc("Exponential linear unit: Y = X for X >= 0, alpha * (exp(X) - 1) otherwise.");
OPERATOR_SCHEMA(EluGradient)
    .Apply(GradientSchema)
    .Arg("alpha", kEluAlphaDoc)
    .Doc("Gradient of Elu: dX = dY for Y >= 0, dY * (Y + alpha) otherwise.");

OPERATOR_SCHEMA(Softplus).Apply(ForwardSchema).Doc("Y = log(1 + exp(X)), elementwise.");
OPERATOR_SCHEMA(SoftplusGradient)
    .Apply(GradientSchema)
    .Doc("Gradient of Softplus: dX = dY * (1 - exp(-Y)).");

// In place is for inference nets: SwishGradient reads X, so the gradient
// maker refuses a Swish that overwrote it.
OPERATOR_SCHEMA(Swish)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .CostInferenceFunction(PointwiseCostInference(5))
    .Input(0, "X", "input tensor, float32 or float64")
    .Output(0, "Y", "X * sigmoid(X), of X's shape and type")
    .Doc("Swish (SiLU): Y = X / (1 + exp(-X)), elementwise.");
OPERATOR_SCHEMA(SwishGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .AllowInplace({{2, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "X", "Swish's input")
    .Input(1, "Y", "Swish's output")
    .Input(2, "dY", "gradient of Y")
    .Output(0, "dX", "dY * (Y + sigmoid(X) * (1 - Y)); may be dY")
    .Doc("Gradient of Swish.");

REGISTER_GRADIENT(Relu, GetGradientFromOutput);
REGISTER_GRADIENT(LeakyRelu, GetGradientFromOutput);
REGISTER_GRADIENT(Sigmoid, GetGradientFromOutput);
REGISTER_GRADIENT(Tanh, GetGradientFromOutput);
REGISTER_GRADIENT(Elu, GetGradientFromOutput);
REGISTER_GRADIENT(Softplus, GetGradientFromOutput);
SHOULD_NOT_DO_GRADIENT(ReluGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(LeakyReluGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SigmoidGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(TanhGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(EluGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SoftplusGradient, kSecondOrder);
REGISTER_GRADIENT(Swish, GetSwishGradient);
SHOULD_NOT_DO_GRADIENT(SwishGradient, kSecondOrder);

}  // namespace doppio
