// HardSigmoid (Caffe2's op) and HardSwish, with their gradients:
//   HardSigmoid: Y = max(0, min(1, alpha * X + beta))  (alpha 0.2, beta 0.5)
//   HardSwish:   Y = X * max(0, min(1, X / 6 + 1 / 2))  (MobileNetV3's, ONNX's)
// torch exports hardswish as HardSigmoid(alpha = 1/6) * X; the inference
// fusion pass turns that back into HardSwish, which ConvFusion applies as a
// oneDNN post-op.
#include <algorithm>

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

struct HardSigmoidFunctor {
  explicit HardSigmoidFunctor(const OperatorBase& op)
      : alpha(op.GetSingleArgument<float>("alpha", 0.2f)),
        beta(op.GetSingleArgument<float>("beta", 0.5f)) {}
  template <typename T>
  void Forward(int64_t n, const T* x, T* y) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = std::min(T(1), std::max(T(0), a * x[i] + b));
  }
  // The slope alpha where the output is strictly inside (0, 1).
  template <typename T>
  void Backward(int64_t n, const T* y, const T* dy, T* dx) const {
    const T a = static_cast<T>(alpha);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = (y[i] > T(0) && y[i] < T(1)) ? a * dy[i] : T(0);
  }
  float alpha, beta;
};

template <typename T>
T HardSwishValue(T x) {
  return x * std::min(T(1), std::max(T(0), x / T(6) + T(0.5)));
}

// 0 below -3, 1 above 3, (2x + 3) / 6 between (PyTorch's choice at the ends).
template <typename T>
T HardSwishSlope(T x) {
  return x <= T(-3) ? T(0) : (x >= T(3) ? T(1) : (T(2) * x + T(3)) / T(6));
}

class HardSwishOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kHardSwish}; }

  void RunOnDevice() override {
    activation::PointwiseForward(*this, Input(0), Output(0),
                                 [](auto v) { return HardSwishValue(v); });
  }
};

// Inputs (X, dY), output dX.
class HardSwishGradientOp final : public Operator<CPUContext> {
 public:
  using Operator<CPUContext>::Operator;

  void RunOnDevice() override {
    const Tensor& X = Input(0);
    const Tensor& dY = Input(1);
    DOPPIO_ENFORCE(dY.dims() == X.dims(), "gradient '", input_name(1), "' has shape ", dY.dims(),
                   " but '", input_name(0), "' has shape ", X.dims());
    EnforceSameType(*this, 0, X, 1, dY);
    DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = X.data<T>();
      const T* dy = dY.data<T>();
      Tensor* dX = Output(0);
      dX->Resize(X.dims());
      T* dx = dX->mutable_data<T>();
      ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) dx[i] = dy[i] * HardSwishSlope(x[i]);
      });
    });
  }
};

class GetHardSwishGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0),
                   "op HardSwish: cannot differentiate HardSwish computed in place "
                   "over '",
                   O(0), "': its gradient reads the input");
    return SingleGradientDef("HardSwishGradient", "", {I(0), GO(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(HardSigmoid, UnaryActivationOp<HardSigmoidFunctor>);
REGISTER_CPU_OPERATOR(HardSigmoidGradient, ActivationGradientOp<HardSigmoidFunctor>);
REGISTER_CPU_OPERATOR(HardSwish, HardSwishOp);
REGISTER_CPU_OPERATOR(HardSwishGradient, HardSwishGradientOp);
REGISTER_GRADIENT(HardSigmoid, GetGradientFromOutput);
REGISTER_GRADIENT(HardSwish, GetHardSwishGradient);
SHOULD_NOT_DO_GRADIENT(HardSigmoidGradient, activation::kSecondOrder);
SHOULD_NOT_DO_GRADIENT(HardSwishGradient, activation::kSecondOrder);

OPERATOR_SCHEMA(HardSigmoid)
    .Apply(activation::ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(4))
    .Arg("alpha", "(float, default 0.2) slope")
    .Arg("beta", "(float, default 0.5) offset")
    .Doc("Hard sigmoid, elementwise: Y = max(0, min(1, alpha * X + beta)).");
OPERATOR_SCHEMA(HardSigmoidGradient)
    .Apply(activation::GradientSchema)
    .Arg("alpha", "(float, default 0.2) the forward op's slope")
    .Arg("beta", "(float, default 0.5) the forward op's offset")
    .Doc("Gradient of HardSigmoid, from its output: dX = alpha * dY where 0 < Y < 1, else 0.");
// In place is for inference nets: HardSwishGradient reads X.
OPERATOR_SCHEMA(HardSwish)
    .Apply(activation::ForwardSchema)
    .CostInferenceFunction(PointwiseCostInference(5))
    .Doc("Hard swish (MobileNetV3), elementwise: Y = X * relu6(X + 3) / 6.");
OPERATOR_SCHEMA(HardSwishGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "X", "HardSwish's input")
    .Input(1, "dY", "gradient of its output")
    .Output(0, "dX", "dY * (0 below -3, 1 above 3, (2X + 3) / 6 between); may be dY")
    .Doc("Gradient of HardSwish.");

}  // namespace doppio
