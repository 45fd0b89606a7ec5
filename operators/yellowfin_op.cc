#include "operators/yellowfin_op.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

enum Input { kParam, kMoment, kLrAvg, kMuAvg, kCurvWin, kGAvg, kG2Avg, kScalars, kGrad, kIter };
enum ScalarSlot { kGNormAvg, kGNorm2Avg, kHMinAvg, kHMaxAvg, kDistanceAvg, kScalarSlots };

}  // namespace

YellowFinOp::YellowFinOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      curv_win_width_(GetSingleArgument<int>("curv_win_width", 20)),
      nesterov_(GetSingleArgument<int>("nesterov", 0) != 0),
      zero_debias_(GetSingleArgument<bool>("zero_debias", true)),
      epsilon_(GetSingleArgument<float>("epsilon", 1e-6f)),
      beta_(GetSingleArgument<float>("beta", 0.999f)) {
  DOPPIO_ENFORCE(curv_win_width_ > 0, "curv_win_width must be positive, got ", curv_win_width_);
}

float YellowFinOp::Average(float value, float average) const {
  return beta_ * average + (1.0f - beta_) * value;
}

YellowFinOp::Statistics YellowFinOp::UpdateAverages(int64_t iter, int64_t size, const float* grad) {
  const float* g_avg = Input(kGAvg).data<float>();
  const float* g2_avg = Input(kG2Avg).data<float>();
  float* g_avg_out = Output(kGAvg)->mutable_data<float>();
  float* g2_avg_out = Output(kG2Avg)->mutable_data<float>();
  float g_norm2 = 0.0f, g_deb_norm2 = 0.0f;
  for (int64_t i = 0; i < size; ++i) {
    g_avg_out[i] = Average(grad[i], g_avg[i]);
    g2_avg_out[i] = Average(grad[i] * grad[i], g2_avg[i]);
    g_norm2 += grad[i] * grad[i];
    const float g_deb = debias_ * g_avg_out[i];
    g_deb_norm2 += g_deb * g_deb;
  }
  g_norm2 = std::max(epsilon_, g_norm2);
  const float* scalars = Input(kScalars).data<float>();
  float* scalars_out = Output(kScalars)->mutable_data<float>();
  Statistics s;
  scalars_out[kGNorm2Avg] = Average(g_norm2, scalars[kGNorm2Avg]);
  s.g_norm2_deb = debias_ * scalars_out[kGNorm2Avg];
  scalars_out[kGNormAvg] = Average(std::sqrt(g_norm2), scalars[kGNormAvg]);
  s.g_norm_deb = std::max(epsilon_, debias_ * scalars_out[kGNormAvg]);
  // The window keeps log |g|^2 of the last curv_win_width steps.
  const float* window = Input(kCurvWin).data<float>();
  float* window_out = Output(kCurvWin)->mutable_data<float>();
  if (window != window_out) std::copy(window, window + curv_win_width_, window_out);
  window_out[(iter - 1) % curv_win_width_] = std::log(g_norm2);
  const int64_t valid = std::min<int64_t>(curv_win_width_, iter);
  const auto range = std::minmax_element(window_out, window_out + valid);
  scalars_out[kHMinAvg] = Average(*range.first, scalars[kHMinAvg]);
  scalars_out[kHMaxAvg] = Average(*range.second, scalars[kHMaxAvg]);
  s.h_min_deb = std::max(epsilon_, std::exp(debias_ * scalars_out[kHMinAvg]));
  s.h_max_deb = std::max(epsilon_, std::exp(debias_ * scalars_out[kHMaxAvg]));
  s.variance = std::max(epsilon_, s.g_norm2_deb - g_deb_norm2);
  const float distance = scalars_out[kGNormAvg] / scalars_out[kGNorm2Avg];
  scalars_out[kDistanceAvg] = Average(distance, scalars[kDistanceAvg]);
  s.distance_deb = debias_ * scalars_out[kDistanceAvg];
  return s;
}

void YellowFinOp::TuneLrMu(const Statistics& s, float lr_avg, float mu_avg) {
  // The momentum is the larger of what the curvature range needs and the
  // root of the cubic of the paper's single-step problem.
  const float curv_ratio = std::sqrt(s.h_max_deb / s.h_min_deb);
  const float mu_limit = (curv_ratio - 1.0f) / (curv_ratio + 1.0f);
  const float pre_p = s.distance_deb * s.h_min_deb;
  const float p = pre_p * pre_p / (2.0f * s.variance);
  const float w3 = (-std::sqrt(p * p + 4.0f / 27.0f * p * p * p) - p) / 2.0f;
  const float w = (w3 > 0.0f ? 1.0f : -1.0f) * std::pow(std::abs(w3), 1.0f / 3.0f);
  const float root = w - p / 3.0f / w + 1.0f;
  const float mu = std::max(root * root, mu_limit * mu_limit);
  const float lr = std::pow(1.0f - std::sqrt(mu), 2.0f) / s.h_min_deb;
  Output(kMuAvg)->mutable_data<float>()[0] = Average(mu, mu_avg);
  Output(kLrAvg)->mutable_data<float>()[0] = Average(lr, lr_avg);
}

void YellowFinOp::RunOnDevice() {
  const Tensor& param = Input(kParam);
  for (int i : {kMoment, kGAvg, kG2Avg, kGrad}) {
    DOPPIO_ENFORCE(Input(i).dims() == param.dims() && Input(i).dtype() == DataType::kFloat,
                   "input '", input_name(i), "' ", Input(i).DebugString(),
                   " must be float32 of the param's shape ", param.dims());
  }
  DOPPIO_ENFORCE(Input(kLrAvg).numel() == 1 && Input(kMuAvg).numel() == 1,
                 "lr_avg and mu_avg must hold one float each");
  DOPPIO_ENFORCE(Input(kCurvWin).numel() == curv_win_width_, "curv_win '", input_name(kCurvWin),
                 "' must hold curv_win_width (", curv_win_width_, ") floats");
  DOPPIO_ENFORCE(Input(kScalars).numel() == kScalarSlots, "scalars_memory '", input_name(kScalars),
                 "' must hold ", int(kScalarSlots), " floats");
  const Tensor& iter_tensor = Input(kIter);
  DOPPIO_ENFORCE(iter_tensor.dtype() == DataType::kInt64 && iter_tensor.numel() == 1, "iter '",
                 input_name(kIter), "' must be one int64");
  const int64_t iter = iter_tensor.data<int64_t>()[0];
  DOPPIO_ENFORCE(iter >= 1, "iter must be at least 1 (run Iter first), got ", iter);
  debias_ = zero_debias_ ? 1.0f / (1.0f - std::pow(beta_, static_cast<float>(iter))) : 1.0f;

  const float lr = Input(kLrAvg).data<float>()[0];
  const float mu = Input(kMuAvg).data<float>()[0];
  for (int i = 0; i < 8; ++i) Output(i)->ResizeLike(Input(i));
  Output(kLrAvg)->mutable_data<float>()[0] = lr;
  Output(kMuAvg)->mutable_data<float>()[0] = mu;
  // The step uses the lr and mu tuned by the previous steps.
  const int64_t size = param.numel();
  const float* grad = Input(kGrad).data<float>();
  const float* w = param.data<float>();
  const float* moment = Input(kMoment).data<float>();
  float* w_out = Output(kParam)->mutable_data<float>();
  float* moment_out = Output(kMoment)->mutable_data<float>();
  for (int64_t i = 0; i < size; ++i) {
    const float previous = moment[i];
    moment_out[i] = mu * previous + lr * grad[i];
    w_out[i] =
        nesterov_ ? w[i] - (1.0f + mu) * moment_out[i] + mu * previous : w[i] - moment_out[i];
  }
  const Statistics statistics = UpdateAverages(iter, size, grad);
  if (iter > 1) TuneLrMu(statistics, lr, mu);
}

REGISTER_CPU_OPERATOR(YellowFin, YellowFinOp);

OPERATOR_SCHEMA(YellowFin)
    .NumInputs(10)
    .NumOutputs(8)
    .AllowInplace({{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}, {7, 7}})
    .Input(0, "param", "float32 parameters")
    .Input(1, "moment", "momentum, param's shape")
    .Input(2, "lr", "[1]: the tuned learning rate (moving average)")
    .Input(3, "mu", "[1]: the tuned momentum (moving average)")
    .Input(4, "curv_win", "[curv_win_width]: log |g|^2 of the last steps")
    .Input(5, "g_avg", "moving average of the gradient")
    .Input(6, "g2_avg", "moving average of the squared gradient")
    .Input(7, "scalars_memory", "[5]: the scalar moving averages")
    .Input(8, "grad", "the gradient")
    .Input(9, "iter", "int64 iteration (>= 1)")
    .Output(0, "output_param", "updated param")
    .Output(1, "output_moment", "updated moment")
    .Output(2, "output_lr", "updated lr")
    .Output(3, "output_mu", "updated mu")
    .Output(4, "output_curv_win", "updated window")
    .Output(5, "output_g_avg", "updated gradient average")
    .Output(6, "output_g2_avg", "updated squared gradient average")
    .Output(7, "output_scalars_memory", "updated scalar averages")
    .Arg("beta", "float: moving-average coefficient (default 0.999)")
    .Arg("curv_win_width", "int: the curvature window (default 20)")
    .Arg("epsilon", "float: the floor of norms and variances (default 1e-6)")
    .Arg("nesterov", "bool: Nesterov momentum (default false)")
    .Arg("zero_debias", "bool: debias the moving averages (default true)")
    .Doc(
        "YellowFin: a momentum SGD step whose lr and momentum tune themselves "
        "(https://arxiv.org/abs/1706.03471).");

SHOULD_NOT_DO_GRADIENT(YellowFin, "it is an optimizer update");

}  // namespace doppio
