#include "operators/prelu_op.h"

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/activation_ops.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

bool ReadChannelsLast(const OperatorBase& op) {
  const std::string order = op.GetSingleArgument<std::string>("order", "NCHW");
  DOPPIO_ENFORCE(order == "NCHW" || order == "NHWC", "argument order is '", order,
                 "'; expected NCHW or NHWC");
  return order == "NHWC";
}

// X viewed as [outer, channels, inner]: element i uses slope
// (i / inner) % channels. A one-element slope is one channel spanning all.
struct ChannelLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelLayout LayoutOf(const OperatorBase& op, const Tensor& X, const std::string& x_name,
                       const Tensor& slope, const std::string& slope_name,
                       bool channels_last) {
  DOPPIO_ENFORCE(slope.dtype() == X.dtype(), "slope '", slope_name, "' holds ",
                 DataTypeName(slope.dtype()), " but '", x_name, "' holds ",
                 DataTypeName(X.dtype()));
  ChannelLayout layout;
  if (slope.numel() == 1) {
    layout.inner = X.numel();
    return layout;
  }
  const int channel_axis = channels_last ? X.ndim() - 1 : 1;
  DOPPIO_ENFORCE(X.ndim() > channel_axis && channel_axis >= 0, "input '", x_name, "' has shape ",
                 X.dims(), ", too few dims for a ", channels_last ? "NHWC" : "NCHW",
                 " channel axis; a per-channel slope '", slope_name, "' needs one");
  layout.outer = X.SizeToDim(channel_axis);
  layout.channels = X.dim(channel_axis);
  layout.inner = X.SizeFromDim(channel_axis + 1);
  DOPPIO_ENFORCE(slope.numel() == layout.channels, "slope '", slope_name, "' has ", slope.numel(),
                 " elements but '", x_name, "' (shape ", X.dims(), ") has ", layout.channels,
                 " channels; give 1 or one per channel");
  return layout;
}

}  // namespace

PReluOp::PReluOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), channels_last_(ReadChannelsLast(*this)) {}

void PReluOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& slope = Input(1);
  DispatchTypes(FloatTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const ChannelLayout layout =
        LayoutOf(*this, X, input_name(0), slope, input_name(1), channels_last_);
    const T* x = X.data<T>();
    const T* w = slope.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    T* y = Y->template mutable_data<T>();
    int64_t i = 0;
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t c = 0; c < layout.channels; ++c) {
        for (int64_t k = 0; k < layout.inner; ++k, ++i) {
          y[i] = x[i] > T(0) ? x[i] : w[c] * x[i];
        }
      }
    }
  });
}

PReluGradientOp::PReluGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), channels_last_(ReadChannelsLast(*this)) {}

void PReluGradientOp::RunOnDevice() {
  DOPPIO_ENFORCE(&InputBlob(0) != &InputBlob(2), "Y ('", input_name(0), "') and X ('",
                 input_name(2),
                 "') are one blob; PRelu ran in place, so its input is lost and its "
                 "gradient cannot be computed");
  const Tensor& Y = Input(0);
  const Tensor& dY = Input(1);
  const Tensor& X = Input(2);
  const Tensor& slope = Input(3);
  DOPPIO_ENFORCE(dY.dims() == X.dims() && Y.dims() == X.dims(), "shapes differ: Y '", input_name(0),
                 "' ", Y.dims(), ", dY '", input_name(1), "' ", dY.dims(), ", X '", input_name(2),
                 "' ", X.dims());
  DOPPIO_ENFORCE(dY.dtype() == X.dtype(), "'", input_name(1), "' holds ", DataTypeName(dY.dtype()),
                 " but '", input_name(2), "' holds ", DataTypeName(X.dtype()));
  DispatchTypes(FloatTypes{}, input_name(2), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const ChannelLayout layout =
        LayoutOf(*this, X, input_name(2), slope, input_name(3), channels_last_);
    const T* x = X.data<T>();
    const T* dy = dY.data<T>();
    const T* w = slope.data<T>();
    Tensor* dSlope = Output(1);
    dSlope->Resize(slope.dims());
    T* dw = dSlope->template mutable_data<T>();
    for (int64_t c = 0; c < slope.numel(); ++c) dw[c] = T(0);
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->template mutable_data<T>();
    int64_t i = 0;
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t c = 0; c < layout.channels; ++c) {
        for (int64_t k = 0; k < layout.inner; ++k, ++i) {
          if (x[i] > T(0)) {
            dx[i] = dy[i];
          } else {
            dw[c] += dy[i] * x[i];
            dx[i] = w[c] * dy[i];
          }
        }
      }
    }
  });
}

REGISTER_CPU_OPERATOR(PRelu, PReluOp);
REGISTER_CPU_OPERATOR(PReluGradient, PReluGradientOp);

namespace {
constexpr const char kOrderDoc[] =
    "(string, default NCHW) where the channels are: NCHW dim 1, NHWC the last dim";
}  // namespace

OPERATOR_SCHEMA(PRelu)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Arg("order", kOrderDoc)
    .Input(0, "X", "input tensor, float32 or float64")
    .Input(1, "Slope", "slope for negative inputs: 1 element (shared) or one per channel")
    .Output(0, "Y", "X where X > 0, Slope[c] * X otherwise; may be X")
    .Doc("Parametric Relu: Y = X for X > 0 and Slope * X otherwise, with one slope per "
         "channel (dim 1 in NCHW, the last dim in NHWC) or one shared slope.");

OPERATOR_SCHEMA(PReluGradient)
    .NumInputs(4)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>{in.at(2), in.at(3)};
    })
    .Arg("order", kOrderDoc)
    .Input(0, "Y", "PRelu's output")
    .Input(1, "dY", "gradient of Y")
    .Input(2, "X", "PRelu's input (must not be Y's blob)")
    .Input(3, "Slope", "PRelu's slope")
    .Output(0, "dX", "gradient of X")
    .Output(1, "dSlope", "gradient of Slope, summed over the elements each slope scales")
    .Doc("Gradient of PRelu for both X and Slope.");

namespace {

class GetPReluGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("PReluGradient", "", {O(0), GO(0), I(0), I(1)}, {GI(0), GI(1)},
                             Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(PRelu, GetPReluGradient);
SHOULD_NOT_DO_GRADIENT(PReluGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
