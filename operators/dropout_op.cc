#include "operators/dropout_op.h"

#include <random>
#include <type_traits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"

namespace doppio {

DropoutArgs ReadDropoutArgs(const OperatorBase& op, bool gradient) {
  DropoutArgs args;
  args.ratio = op.GetSingleArgument<float>("ratio", 0.5f);
  // ratio 1 would drop everything and scale by infinity.
  DOPPIO_ENFORCE(args.ratio >= 0.0f && args.ratio < 1.0f, "argument ratio is ", args.ratio,
                 "; it must be in [0, 1)");
  args.is_test = op.GetSingleArgument<int>("is_test", 0) != 0;
  if (gradient) {
    DOPPIO_ENFORCE(args.is_test || op.InputSize() == 2,
                   "training mode (is_test=0) needs Dropout's mask as the second input");
  } else {
    DOPPIO_ENFORCE(args.is_test || op.OutputSize() == 2,
                   "training mode (is_test=0) needs the mask output, which the gradient "
                   "reads; give two outputs or set is_test=1");
  }
  return args;
}

DropoutOp::DropoutOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadDropoutArgs(*this, /*gradient=*/false)) {}

void DropoutOp::RunOnDevice() {
  const Tensor& X = Input(0);
  activation::DispatchFloatLikeInput(*this, X, Output(0), [&](auto x, auto y, int64_t n) {
    using T = std::remove_pointer_t<decltype(y)>;
    bool* mask = nullptr;
    if (OutputSize() == 2) {
      Tensor* mask_tensor = Output(1);
      mask_tensor->Resize(X.dims());
      mask = mask_tensor->template mutable_data<bool>();
    }
    if (args_.is_test) {
      if (y != x) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      }
      // Nothing is dropped at test time; a mask, if asked for, says so.
      if (mask != nullptr) {
        for (int64_t i = 0; i < n; ++i) mask[i] = true;
      }
      return;
    }
    const T scale = static_cast<T>(1.0 / (1.0 - static_cast<double>(args_.ratio)));
    std::bernoulli_distribution keep(1.0 - static_cast<double>(args_.ratio));
    std::mt19937& generator = context_.RandGenerator();
    for (int64_t i = 0; i < n; ++i) {
      mask[i] = keep(generator);
      y[i] = mask[i] ? x[i] * scale : T(0);
    }
  });
}

DropoutGradientOp::DropoutGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadDropoutArgs(*this, /*gradient=*/true)) {}

void DropoutGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const bool* mask = nullptr;
  if (!args_.is_test) {
    const Tensor& mask_tensor = Input(1);
    DOPPIO_ENFORCE(mask_tensor.dtype() == DataType::kBool, "mask '", input_name(1), "' holds ",
                   DataTypeName(mask_tensor.dtype()), "; Dropout's mask is bool");
    DOPPIO_ENFORCE(mask_tensor.dims() == dY.dims(), "mask '", input_name(1), "' has shape ",
                   mask_tensor.dims(), " but gradient '", input_name(0), "' has shape ", dY.dims());
    mask = mask_tensor.data<bool>();
  }
  activation::DispatchFloatLikeInput(*this, dY, Output(0), [&](auto dy, auto dx, int64_t n) {
    using T = std::remove_pointer_t<decltype(dx)>;
    if (args_.is_test) {
      if (dx != dy) {
        for (int64_t i = 0; i < n; ++i) dx[i] = dy[i];
      }
      return;
    }
    const T scale = static_cast<T>(1.0 / (1.0 - static_cast<double>(args_.ratio)));
    for (int64_t i = 0; i < n; ++i) dx[i] = mask[i] ? dy[i] * scale : T(0);
  });
}

REGISTER_CPU_OPERATOR(Dropout, DropoutOp);
REGISTER_CPU_OPERATOR(DropoutGrad, DropoutGradientOp);

namespace {
constexpr const char kRatioDoc[] = "(float, default 0.5) probability of dropping an element";
constexpr const char kIsTestDoc[] =
    "(int, default 0) nonzero: test mode, Y = X and nothing is dropped";
}  // namespace

OPERATOR_SCHEMA(Dropout).LowPrecisionInFloat32()
    .NumInputs(1)
    .NumOutputs(1, 2)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      std::vector<TensorShape> out = {in.at(0)};
      if (def.output_size() == 2) {
        TensorShape mask = in.at(0);
        mask.set_data_type(TensorProto::BOOL);
        out.push_back(mask);
      }
      return out;
    })
    .Arg("ratio", kRatioDoc)
    .Arg("is_test", kIsTestDoc)
    .Input(0, "data", "input tensor, float32 or float64")
    .Output(0, "output", "X with dropped elements zeroed and kept ones scaled by 1/(1-ratio)")
    .Output(1, "mask", "bool, true where the element was kept (all true in test mode)")
    .Doc("Randomly zeroes elements with probability `ratio` during training, scaling "
         "the rest by 1 / (1 - ratio); a copy of the input in test mode.");

OPERATOR_SCHEMA(DropoutGrad).LowPrecisionInFloat32()
    .NumInputs(1, 2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("ratio", kRatioDoc)
    .Arg("is_test", kIsTestDoc)
    .Input(0, "dY", "gradient of Dropout's output")
    .Input(1, "mask", "Dropout's mask (training mode only)")
    .Output(0, "dX", "dY * mask / (1 - ratio); dY itself in test mode")
    .Doc("Gradient of Dropout.");

namespace {

class GetDropoutGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    const bool is_test = ArgumentHelper(Def()).GetSingle<int>("is_test", 0) != 0;
    if (is_test) {
      return SingleGradientDef("DropoutGrad", "", {GO(0)}, {GI(0)}, Def().arg());
    }
    return SingleGradientDef("DropoutGrad", "", {GO(0), O(1)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(Dropout, GetDropoutGradient);
SHOULD_NOT_DO_GRADIENT(DropoutGrad, "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
