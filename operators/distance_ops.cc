#include "operators/distance_ops.h"

#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

// Rows N and row length D of X and Y, which must match.
std::pair<int64_t, int64_t> RowsOf(const OperatorBase& op, const Tensor& X, const Tensor& Y) {
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat && Y.dtype() == DataType::kFloat, "X '",
                 op.input_name(0), "' and Y '", op.input_name(1), "' must be float32");
  DOPPIO_ENFORCE(X.ndim() >= 1 && X.dims() == Y.dims(), "X '", op.input_name(0), "' ", X.dims(),
                 " and Y '", op.input_name(1), "' ", Y.dims(),
                 " must have one shape ([N] or [N, D...]); inputs of different lengths are "
                 "not supported");
  return {X.dim(0), X.SizeFromDim(1)};
}

}  // namespace

void DotProductOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const auto [rows, length] = RowsOf(*this, X, Y);
  Tensor* Z = Output(0);
  Z->Resize({rows});
  const float* x = X.data<float>();
  const float* y = Y.data<float>();
  float* z = Z->mutable_data<float>();
  for (int64_t n = 0; n < rows; ++n) {
    double sum = 0;
    for (int64_t d = 0; d < length; ++d) sum += double(x[n * length + d]) * y[n * length + d];
    z[n] = static_cast<float>(sum);
  }
}

void DotProductGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dZ = Input(2);
  const auto [rows, length] = RowsOf(*this, X, Y);
  DOPPIO_ENFORCE(dZ.dtype() == DataType::kFloat && dZ.numel() == rows, "dZ '", input_name(2),
                 "' must be float32 with one element per row (", rows, "), not ", dZ.DebugString());
  Tensor* dX = Output(0);
  Tensor* dY = Output(1);
  dX->ResizeLike(X);
  dY->ResizeLike(Y);
  const float* x = X.data<float>();
  const float* y = Y.data<float>();
  const float* dz = dZ.data<float>();
  float* dx = dX->mutable_data<float>();
  float* dy = dY->mutable_data<float>();
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t d = 0; d < length; ++d) {
      const int64_t i = n * length + d;
      dx[i] = dz[n] * y[i];
      dy[i] = dz[n] * x[i];
    }
  }
}

REGISTER_CPU_OPERATOR(DotProduct, DotProductOp);
REGISTER_CPU_OPERATOR(DotProductGradient, DotProductGradientOp);

OPERATOR_SCHEMA(DotProduct)
    .NumInputs(2)
    .NumOutputs(1)
    .Input(0, "X", "float32 [N] or [N, D...]")
    .Input(1, "Y", "float32, X's shape")
    .Output(0, "Z", "[N]: the dot product of each row of X with the row of Y")
    .Doc("Row-wise dot products of two tensors of one shape (1-D inputs: X * Y).");

OPERATOR_SCHEMA(DotProductGradient)
    .NumInputs(3)
    .NumOutputs(2)
    .Input(0, "X", "DotProduct's X")
    .Input(1, "Y", "DotProduct's Y")
    .Input(2, "dZ", "gradient of Z")
    .Output(0, "dX", "dZ[n] * Y[n]")
    .Output(1, "dY", "dZ[n] * X[n]")
    .Doc("Gradient of DotProduct.");

namespace {

class GetDotProductGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("DotProductGradient", "", {I(0), I(1), GO(0)}, {GI(0), GI(1)});
  }
};

}  // namespace

REGISTER_GRADIENT(DotProduct, GetDotProductGradient);
SHOULD_NOT_DO_GRADIENT(DotProductGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
