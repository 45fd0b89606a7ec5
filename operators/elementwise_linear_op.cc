#include "operators/elementwise_linear_op.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

struct RowsAndFeatures {
  int64_t rows;
  int64_t features;
};

// X as [N, D] split at `axis`; `a` (and `b`, when given) must be [D] floats.
RowsAndFeatures Split(const OperatorBase& op, const Tensor& x, int axis, const Tensor& a,
                      const Tensor* b) {
  DOPPIO_ENFORCE(x.dtype() == DataType::kFloat, "X '", op.input_name(0), "' must be float32, not ",
                 x.DebugString());
  const int canonical = x.CanonicalAxis(axis);
  RowsAndFeatures split{x.SizeToDim(canonical), x.SizeFromDim(canonical)};
  for (const Tensor* t : {&a, b}) {
    if (t == nullptr) continue;
    DOPPIO_ENFORCE(t->ndim() == 1 && t->numel() == split.features && t->dtype() == DataType::kFloat,
                   "a and b must be float32 [", split.features, "] (the dims of X from axis ", axis,
                   "), not ", t->DebugString());
  }
  return split;
}

}  // namespace

ElementwiseLinearOp::ElementwiseLinearOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 1)) {}

void ElementwiseLinearOp::RunOnDevice() {
  const Tensor& x = Input(0);
  const Tensor& a = Input(1);
  const Tensor& b = Input(2);
  const RowsAndFeatures split = Split(*this, x, axis_, a, &b);
  Tensor* y = Output(0);
  y->ResizeLike(x);
  const float* xd = x.data<float>();
  const float* ad = a.data<float>();
  const float* bd = b.data<float>();
  float* yd = y->mutable_data<float>();
  for (int64_t n = 0; n < split.rows; ++n) {
    for (int64_t d = 0; d < split.features; ++d) {
      const int64_t i = n * split.features + d;
      yd[i] = xd[i] * ad[d] + bd[d];
    }
  }
}

ElementwiseLinearGradientOp::ElementwiseLinearGradientOp(const OperatorDef& def,
                                                         Workspace* workspace)
    : Operator<CPUContext>(def, workspace), axis_(GetSingleArgument<int>("axis", 1)) {}

void ElementwiseLinearGradientOp::RunOnDevice() {
  const Tensor& dy = Input(0);
  const Tensor& x = Input(1);
  const Tensor& a = Input(2);
  const RowsAndFeatures split = Split(*this, x, axis_, a, nullptr);
  DOPPIO_ENFORCE(dy.dims() == x.dims() && dy.dtype() == DataType::kFloat, "dY '", input_name(0),
                 "' ", dy.DebugString(), " must be float32 of X's shape ", x.dims());
  Tensor* dx = Output(0);
  Tensor* da = Output(1);
  Tensor* db = Output(2);
  dx->ResizeLike(x);
  da->ResizeLike(a);
  db->ResizeLike(a);
  const float* dyd = dy.data<float>();
  const float* xd = x.data<float>();
  const float* ad = a.data<float>();
  float* dxd = dx->mutable_data<float>();
  float* dad = da->mutable_data<float>();
  float* dbd = db->mutable_data<float>();
  for (int64_t d = 0; d < split.features; ++d) dad[d] = dbd[d] = 0.0f;
  for (int64_t n = 0; n < split.rows; ++n) {
    for (int64_t d = 0; d < split.features; ++d) {
      const int64_t i = n * split.features + d;
      dxd[i] = dyd[i] * ad[d];
      dad[d] += dyd[i] * xd[i];
      dbd[d] += dyd[i];
    }
  }
}

REGISTER_CPU_OPERATOR(ElementwiseLinear, ElementwiseLinearOp);
REGISTER_CPU_OPERATOR(ElementwiseLinearGradient, ElementwiseLinearGradientOp);

OPERATOR_SCHEMA(ElementwiseLinear)
    .NumInputs(3)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Arg("axis", "(int, default 1) X is [N, D] split before this dim")
    .Input(0, "X", "float32 tensor")
    .Input(1, "a", "[D] scales")
    .Input(2, "b", "[D] shifts")
    .Output(0, "Y", "X * a + b per feature, X's shape")
    .Doc("Y[n, d] = X[n, d] * a[d] + b[d], with X viewed as [N, D] split at axis.");

OPERATOR_SCHEMA(ElementwiseLinearGradient)
    .NumInputs(3)
    .NumOutputs(3)
    .Arg("axis", "as ElementwiseLinear's")
    .Input(0, "dY", "gradient of Y")
    .Input(1, "X", "ElementwiseLinear's X")
    .Input(2, "a", "ElementwiseLinear's a")
    .Output(0, "dX", "dY * a")
    .Output(1, "da", "sum over rows of dY * X")
    .Output(2, "db", "sum over rows of dY")
    .Doc("Gradient of ElementwiseLinear.");

namespace {

class GetElementwiseLinearGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ElementwiseLinearGradient", "", {GO(0), I(0), I(1)},
                             {GI(0), GI(1), GI(2)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(ElementwiseLinear, GetElementwiseLinearGradient);
SHOULD_NOT_DO_GRADIENT(ElementwiseLinearGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
