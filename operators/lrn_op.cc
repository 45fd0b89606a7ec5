#include "operators/lrn_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

LRNArgs ReadLRNArgs(const OperatorBase& op) {
  LRNArgs args;
  args.size = op.GetSingleArgument<int>("size", 0);
  args.alpha = op.GetSingleArgument<float>("alpha", 0.0f);
  args.beta = op.GetSingleArgument<float>("beta", 0.0f);
  args.bias = op.GetSingleArgument<float>("bias", 1.0f);
  args.channels_last = ReadChannelsLast(op);
  DOPPIO_ENFORCE(args.size > 0 && args.size % 2 == 1, "argument 'size' is ", args.size,
                 "; it must be a positive odd number");
  return args;
}

// The channel vectors of a 4-D activation: vector v (one per sample and
// spatial position) has its channel c at base(v) + c * step.
struct ChannelVectors {
  int64_t batch, channels, inner;
  bool channels_last;
  int64_t count() const { return batch * inner; }
  int64_t base(int64_t v) const {
    const int64_t n = v / inner, position = v % inner;
    return channels_last ? v * channels : n * channels * inner + position;
  }
  int64_t step() const { return channels_last ? 1 : inner; }
};

ChannelVectors ViewChannels(const OperatorBase& op, int input, const Tensor& X,
                            bool channels_last) {
  DOPPIO_ENFORCE(X.ndim() == 4, "input '", op.input_name(input), "' has shape ", X.dims(),
                 "; LRN needs a 4-D ", channels_last ? "NHWC" : "NCHW", " tensor");
  const ChannelView view = ViewByChannel(op, input, X, channels_last, 4);
  return ChannelVectors{view.batch, view.channels, view.inner, channels_last};
}

// scale = bias + alpha / size * (sum of squares over each channel window).
template <typename T>
void ComputeScale(const T* x, const ChannelVectors& layout, const LRNArgs& args,
                  std::vector<double>* scale) {
  const int64_t C = layout.channels, step = layout.step();
  const int half = (args.size - 1) / 2;
  const double alpha_over_size = args.alpha / args.size;
  scale->resize(layout.count() * C);
  std::vector<double> squares(C);
  for (int64_t v = 0; v < layout.count(); ++v) {
    const T* xv = x + layout.base(v);
    for (int64_t c = 0; c < C; ++c) squares[c] = static_cast<double>(xv[c * step]) * xv[c * step];
    double* sv = scale->data() + v * C;
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t k = std::max<int64_t>(0, c - half); k <= std::min<int64_t>(C - 1, c + half); ++k) {
        sum += squares[k];
      }
      sv[c] = args.bias + alpha_over_size * sum;
    }
  }
}

}  // namespace

// ---- LRN ----

LRNOp::LRNOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadLRNArgs(*this)) {}

void LRNOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void LRNOp::Run() {
  const Tensor& X = Input(0);
  const ChannelVectors layout = ViewChannels(*this, 0, X, args_.channels_last);
  std::vector<double> scale;
  ComputeScale(X.data<T>(), layout, args_, &scale);
  const T* x = X.data<T>();
  Tensor* Y = Output(0);
  Y->Resize(X.dims());
  T* y = Y->mutable_data<T>();
  T* scale_out = nullptr;
  if (OutputSize() > 1) {
    Output(1)->Resize(X.dims());
    scale_out = Output(1)->template mutable_data<T>();
  }
  const int64_t C = layout.channels, step = layout.step();
  for (int64_t v = 0; v < layout.count(); ++v) {
    const int64_t base = layout.base(v);
    for (int64_t c = 0; c < C; ++c) {
      const double s = scale[v * C + c];
      y[base + c * step] = static_cast<T>(x[base + c * step] * std::pow(s, -args_.beta));
      if (scale_out) scale_out[base + c * step] = static_cast<T>(s);
    }
  }
}

// ---- LRNGradient ----

LRNGradientOp::LRNGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), args_(ReadLRNArgs(*this)) {}

void LRNGradientOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void LRNGradientOp::Run() {
  const Tensor& X = Input(0);
  const ChannelVectors layout = ViewChannels(*this, 0, X, args_.channels_last);
  for (int k = 1; k <= 2; ++k) {
    DOPPIO_ENFORCE(Input(k).dims() == X.dims() && Input(k).dtype() == X.dtype(), "'", input_name(k),
                   "' is ", Input(k).DebugString(), " but '", input_name(0), "' is ",
                   X.DebugString());
  }
  std::vector<double> scale;
  ComputeScale(X.data<T>(), layout, args_, &scale);
  const T* x = X.data<T>();
  const T* y = Input(1).data<T>();
  const T* dy = Input(2).data<T>();
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  T* dx = dX->mutable_data<T>();
  // dX_k = dY_k * scale_k^-beta
  //        - 2 alpha beta / size * X_k * sum over the window of k of dY_c Y_c / scale_c
  // (windows are symmetric, so c's window holds k exactly when k's holds c).
  const int64_t C = layout.channels, step = layout.step();
  const int half = (args_.size - 1) / 2;
  const double cache_ratio = 2.0 * args_.alpha * args_.beta / args_.size;
  std::vector<double> ratio(C);
  for (int64_t v = 0; v < layout.count(); ++v) {
    const int64_t base = layout.base(v);
    const double* sv = scale.data() + v * C;
    for (int64_t c = 0; c < C; ++c) {
      ratio[c] = static_cast<double>(dy[base + c * step]) * y[base + c * step] / sv[c];
    }
    for (int64_t k = 0; k < C; ++k) {
      double sum = 0;
      for (int64_t c = std::max<int64_t>(0, k - half); c <= std::min<int64_t>(C - 1, k + half); ++c) {
        sum += ratio[c];
      }
      const int64_t index = base + k * step;
      dx[index] = static_cast<T>(dy[index] * std::pow(sv[k], -args_.beta) -
                                 cache_ratio * x[index] * sum);
    }
  }
}

// ---- registration ----

REGISTER_CPU_OPERATOR(LRN, LRNOp);
REGISTER_CPU_OPERATOR(LRNGradient, LRNGradientOp);

namespace {

void LRNArgDocs(OpSchema& schema) {
  schema.Arg("size", "(int, required) number of channels summed over; positive and odd", true)
      .Arg("alpha", "(float, default 0) multiplier of the sum of squares")
      .Arg("beta", "(float, default 0) exponent")
      .Arg("bias", "(float, default 1) additive term")
      .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"");
}

}  // namespace

OPERATOR_SCHEMA(LRN).LowPrecisionInFloat32()
    .NumInputs(1)
    .NumOutputs(1, 2)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      return std::vector<TensorShape>(def.output_size(), in.at(0));
    })
    .Apply(LRNArgDocs)
    .Input(0, "X", "4-D input, NCHW or NHWC (float32 or float64)")
    .Output(0, "Y", "X * scale^(-beta), of X's shape")
    .Output(1, "Y_scale", "(optional) bias + alpha / size * windowed sum of squares")
    .Doc("Local response normalization across channels: each value is divided by "
         "(bias + alpha / size * sum of squares over `size` neighbouring channels)^beta.");

OPERATOR_SCHEMA(LRNGradient).LowPrecisionInFloat32()
    .NumInputs(3)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Apply(LRNArgDocs)
    .Input(0, "X", "LRN's input")
    .Input(1, "Y", "LRN's output")
    .Input(2, "dY", "gradient of LRN's output")
    .Output(0, "dX", "gradient of X")
    .Doc("Gradient of LRN; takes LRN's arguments.");

namespace {

class GetLRNGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("LRNGradient", "", {I(0), O(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(LRN, GetLRNGradient);
SHOULD_NOT_DO_GRADIENT(LRNGradient, "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
