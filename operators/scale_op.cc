#include "operators/scale_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/math_functors.h"
#include "operators/op_cost.h"
#include "operators/op_type_dispatch.h"
#include "operators/parallel_for.h"

namespace doppio {

float ReadScaleArgument(const OperatorBase& op) {
  return op.GetSingleArgument<float>("scale", 1.0f);
}

ScaleOp::ScaleOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), scale_(ReadScaleArgument(*this)) {}

void ScaleOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    T* y = Y->mutable_data<T>();
    const functors::Scale scale{scale_};
    ParallelFor(X.numel(), [&](int64_t begin, int64_t end) {
      functors::CpuUnary(scale, end - begin, x + begin, y + begin);
    });
  });
}

REGISTER_CPU_OPERATOR(Scale, ScaleOp);

OPERATOR_SCHEMA(Scale).LowPrecisionInFloat32()
    .Elementwise()
    .NumInputs(1)
    .CostInferenceFunction(PointwiseCostInference(1))
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("scale", "(float, default 1.0) the multiplier")
    .Input(0, "input", "float32 or float64 tensor")
    .Output(0, "output", "scale * input, of the input's shape and type")
    .Doc("Multiplies every element of the input by `scale`.");

namespace {

class GetScaleGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // Linear: the gradient is scaled by the same factor.
    return SingleGradientDef("Scale", "", {GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(Scale, GetScaleGradient);

}  // namespace doppio
