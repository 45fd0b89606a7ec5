// InstanceNorm and InstanceNormGradient (declared in layer_norm_op.h).
#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/layer_norm_op.h"
#include "operators/normalization_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

namespace {

// Element i of plane (n, c) sits at base + i * step: planes are contiguous
// in NCHW and interleaved channel by channel in NHWC.
struct PlaneLayout {
  int64_t batch, channels, inner;
  bool channels_last;
  int64_t base(int64_t n, int64_t c) const {
    return channels_last ? n * inner * channels + c : (n * channels + c) * inner;
  }
  int64_t step() const { return channels_last ? channels : 1; }
};

// Mean and 1 / sqrt(var + epsilon) of every plane, as [N, C].
template <typename T>
void PlaneMoments(const T* x, const PlaneLayout& layout, double epsilon,
                  std::vector<double>* mean, std::vector<double>* inv_std) {
  const int64_t planes = layout.batch * layout.channels;
  mean->assign(planes, 0.0);
  inv_std->assign(planes, 0.0);
  const int64_t step = layout.step();
  for (int64_t n = 0; n < layout.batch; ++n) {
    for (int64_t c = 0; c < layout.channels; ++c) {
      const T* p = x + layout.base(n, c);
      double sum = 0;
      for (int64_t i = 0; i < layout.inner; ++i) sum += p[i * step];
      const double mu = layout.inner > 0 ? sum / layout.inner : 0.0;
      double squares = 0;
      for (int64_t i = 0; i < layout.inner; ++i) {
        const double d = p[i * step] - mu;
        squares += d * d;
      }
      const double var = layout.inner > 0 ? squares / layout.inner : 0.0;
      (*mean)[n * layout.channels + c] = mu;
      (*inv_std)[n * layout.channels + c] = 1.0 / std::sqrt(var + epsilon);
    }
  }
}

double ReadEpsilon(const OperatorBase& op) {
  const double epsilon = op.GetSingleArgument<float>("epsilon", 1e-5f);
  DOPPIO_ENFORCE(epsilon >= 0, "argument 'epsilon' is ", epsilon, "; it must not be negative");
  return epsilon;
}

}  // namespace

// ---- InstanceNorm ----

InstanceNormOp::InstanceNormOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      epsilon_(ReadEpsilon(*this)),
      channels_last_(ReadChannelsLast(*this)) {}

void InstanceNormOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void InstanceNormOp::Run() {
  const Tensor& X = Input(0);
  const ChannelView view = ViewByChannel(*this, 0, X, channels_last_, 3);
  const PlaneLayout layout{view.batch, view.channels, view.inner, channels_last_};
  const int64_t N = view.batch, C = view.channels;
  CheckParameter(*this, 1, Input(1), C, X.dtype(), "scale");
  CheckParameter(*this, 2, Input(2), C, X.dtype(), "bias");
  const T* gamma = Input(1).data<T>();
  const T* beta = Input(2).data<T>();
  std::vector<double> mean, inv_std;
  PlaneMoments(X.data<T>(), layout, epsilon_, &mean, &inv_std);
  // Y may be X: the statistics are taken before Y is written.
  Tensor* Y = Output(0);
  Y->Resize(X.dims());
  const T* x = X.data<T>();
  T* y = Y->mutable_data<T>();
  const int64_t step = layout.step();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane = n * C + c;
      const double a = inv_std[plane] * gamma[c];
      const double b = beta[c] - a * mean[plane];
      const int64_t base = layout.base(n, c);
      for (int64_t i = 0; i < view.inner; ++i) {
        y[base + i * step] = static_cast<T>(a * x[base + i * step] + b);
      }
    }
  }
  const std::vector<double>* saved[] = {&mean, &inv_std};
  for (int k = 1; k < OutputSize(); ++k) {
    Tensor* out = Output(k);
    out->Resize({N, C});
    T* data = out->mutable_data<T>();
    for (int64_t i = 0; i < N * C; ++i) data[i] = static_cast<T>((*saved[k - 1])[i]);
  }
}

// ---- InstanceNormGradient ----

InstanceNormGradientOp::InstanceNormGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      epsilon_(ReadEpsilon(*this)),
      channels_last_(ReadChannelsLast(*this)) {}

void InstanceNormGradientOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void InstanceNormGradientOp::Run() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(3);
  const ChannelView view = ViewByChannel(*this, 0, X, channels_last_, 3);
  const PlaneLayout layout{view.batch, view.channels, view.inner, channels_last_};
  const int64_t N = view.batch, C = view.channels, inner = view.inner;
  CheckParameter(*this, 1, Input(1), C, X.dtype(), "scale");
  CheckParameter(*this, 2, Input(2), C, X.dtype(), "bias");
  DOPPIO_ENFORCE(dY.dims() == X.dims() && dY.dtype() == X.dtype(), "gradient '", input_name(3),
                 "' is ", dY.DebugString(), " but '", input_name(0), "' is ", X.DebugString());
  const T* x = X.data<T>();
  const T* dy = dY.data<T>();
  const T* gamma = Input(1).data<T>();
  std::vector<double> mean, inv_std;
  if (InputSize() == 6) {
    CheckParameter(*this, 4, Input(4), N * C, X.dtype(), "saved mean");
    CheckParameter(*this, 5, Input(5), N * C, X.dtype(), "saved inverse stdev");
    mean.assign(Input(4).data<T>(), Input(4).data<T>() + N * C);
    inv_std.assign(Input(5).data<T>(), Input(5).data<T>() + N * C);
  } else {
    PlaneMoments(x, layout, epsilon_, &mean, &inv_std);
  }
  std::vector<double> dgamma(C, 0.0), dbeta(C, 0.0);
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  T* dx = dX->mutable_data<T>();
  const int64_t step = layout.step();
  // Per plane, with xhat = (x - mean) * inv_std and g = dY * gamma[c]:
  //   dX = inv_std * (g - mean(g) - xhat * mean(g * xhat)).
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t plane = n * C + c;
      const int64_t base = layout.base(n, c);
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = base + i * step;
        const double xhat = (x[k] - mean[plane]) * inv_std[plane];
        sum_dy += dy[k];
        sum_dy_xhat += dy[k] * xhat;
      }
      dgamma[c] += sum_dy_xhat;
      dbeta[c] += sum_dy;
      const double mean_g = gamma[c] * sum_dy / inner;
      const double mean_gx = gamma[c] * sum_dy_xhat / inner;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = base + i * step;
        const double xhat = (x[k] - mean[plane]) * inv_std[plane];
        dx[k] = static_cast<T>(inv_std[plane] * (gamma[c] * dy[k] - mean_g - xhat * mean_gx));
      }
    }
  }
  for (int k = 1; k <= 2; ++k) {
    Tensor* out = Output(k);
    out->Resize(Input(1).dims());
    T* data = out->mutable_data<T>();
    const std::vector<double>& values = k == 1 ? dgamma : dbeta;
    for (int64_t c = 0; c < C; ++c) data[c] = static_cast<T>(values[c]);
  }
}

// ---- registration ----

REGISTER_CPU_OPERATOR(InstanceNorm, InstanceNormOp);
REGISTER_CPU_OPERATOR(InstanceNormGradient, InstanceNormGradientOp);

namespace {

std::vector<TensorShape> InstanceNormShapeInference(const OperatorDef& def,
                                                    const std::vector<TensorShape>& in) {
  const TensorShape& X = in.at(0);
  std::vector<TensorShape> out{X};
  TensorShape stat;
  stat.set_data_type(X.data_type());
  const bool channels_last = ArgumentHelper(def).GetSingle<std::string>("order", "NCHW") == "NHWC";
  if (X.dims_size() >= 3) {
    stat.add_dims(X.dims(0));
    stat.add_dims(X.dims(channels_last ? X.dims_size() - 1 : 1));
  } else {
    stat.set_unknown_shape(true);
  }
  for (int k = 1; k < def.output_size(); ++k) out.push_back(stat);
  return out;
}

}  // namespace

OPERATOR_SCHEMA(InstanceNorm)
    .NumInputs(3)
    .NumOutputs(1, 3)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(InstanceNormShapeInference)
    .Arg("epsilon", "(float, default 1e-5) added to the variance before the square root")
    .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
    .Input(0, "input", "tensor of rank >= 3, NCHW or NHWC (float32 or float64)")
    .Input(1, "scale", "per-channel scale, C elements")
    .Input(2, "bias", "per-channel bias, C elements")
    .Output(0, "output", "the normalized input, of its shape")
    .Output(1, "saved_mean", "(optional) mean of each (sample, channel) plane, [N, C]")
    .Output(2, "saved_inv_stdev", "(optional) 1 / sqrt(var + epsilon) of each plane, [N, C]")
    .Doc("Instance normalization (https://arxiv.org/abs/1607.08022): every (sample, "
         "channel) plane is normalized on its own, then scaled and shifted per channel.");

OPERATOR_SCHEMA(InstanceNormGradient)
    .NumInputs(4, 6)
    .NumOutputs(3)
    .Arg("epsilon", "(float, default 1e-5) InstanceNorm's epsilon")
    .Arg("order", "(string, default \"NCHW\") InstanceNorm's order")
    .Input(0, "input", "InstanceNorm's input")
    .Input(1, "scale", "InstanceNorm's scale")
    .Input(2, "bias", "InstanceNorm's bias")
    .Input(3, "output_grad", "gradient of InstanceNorm's output")
    .Input(4, "saved_mean", "(optional) InstanceNorm's saved mean")
    .Input(5, "saved_inv_stdev", "(optional) InstanceNorm's saved inverse stdev")
    .Output(0, "input_grad", "gradient of the input")
    .Output(1, "scale_grad", "gradient of scale")
    .Output(2, "bias_grad", "gradient of bias")
    .Doc("Gradient of InstanceNorm; statistics not given are recomputed from the input.");

namespace {

class GetInstanceNormGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    std::vector<std::string> inputs = {I(0), I(1), I(2), GO(0)};
    // Only the full pair of saved statistics is reused; a lone mean is not.
    if (Def().output_size() == 3) {
      inputs.push_back(O(1));
      inputs.push_back(O(2));
    }
    return SingleGradientDef("InstanceNormGradient", "", inputs, {GI(0), GI(1), GI(2)},
                             Def().arg());
  }
};

}  // namespace

REGISTER_GRADIENT(InstanceNorm, GetInstanceNormGradient);
SHOULD_NOT_DO_GRADIENT(InstanceNormGradient,
                       "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
