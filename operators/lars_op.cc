#include "operators/lars_op.h"

#include <cmath>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/optimizer_utils.h"

namespace doppio {

LarsOp::LarsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), offset_(GetSingleArgument<float>("offset", 0.5f)) {
  DOPPIO_ENFORCE(offset_ >= 0, "argument offset must be >= 0, got ", offset_);
}

void LarsOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dX = Input(1);
  EnforceSameSizeAndType(*this, 0, X, 1, dX);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* dx = dX.data<T>();
    double x_squares = 0.0, dx_squares = 0.0;
    for (int64_t i = 0; i < X.numel(); ++i) {
      x_squares += static_cast<double>(x[i]) * x[i];
      dx_squares += static_cast<double>(dx[i]) * dx[i];
    }
    double rescale = 1.0;
    if (x_squares > 0) rescale /= std::sqrt(dx_squares / x_squares) + offset_;
    Tensor* out = Output(0);
    out->Resize({1});
    out->mutable_data<T>()[0] = static_cast<T>(rescale);
  });
}

REGISTER_CPU_OPERATOR(Lars, LarsOp);

OPERATOR_SCHEMA(Lars)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.set_data_type(in.at(0).data_type());
      out.add_dims(1);
      return std::vector<TensorShape>{out};
    })
    .Arg("offset", "(float, default 0.5) added to the norm ratio; >= 0")
    .Input(0, "X", "parameter, float32 or float64")
    .Input(1, "dX", "its gradient, X's size and type")
    .Output(0, "lr_rescale", "[1]: 1 / (||dX|| / ||X|| + offset), 1 when X is 0")
    .Doc("Layer-wise adaptive rate scaling: the factor for X's local learning rate.");

SHOULD_NOT_DO_GRADIENT(Lars, "it computes a learning-rate factor, not part of the model");

}  // namespace doppio
