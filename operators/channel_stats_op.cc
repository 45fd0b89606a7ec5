#include "operators/channel_stats_op.h"

#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

ChannelStatsOp::ChannelStatsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), channels_last_(ReadChannelsLast(*this)) {}

void ChannelStatsOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void ChannelStatsOp::Run() {
  const Tensor& X = Input(0);
  const ChannelView view = ViewByChannel(*this, 0, X, channels_last_, 2);
  const int64_t N = view.batch, C = view.channels, inner = view.inner;
  // Accumulated in double: these sums are later divided into a variance as
  // E[x^2] - E[x]^2, which loses what float accumulation would round away.
  std::vector<double> sum(C, 0.0), sumsq(C, 0.0);
  const T* x = X.data<T>();
  if (channels_last_) {
    for (int64_t row = 0; row < N * inner; ++row) {
      for (int64_t c = 0; c < C; ++c) {
        const double v = x[row * C + c];
        sum[c] += v;
        sumsq[c] += v * v;
      }
    }
  } else {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        const T* run = x + (n * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const double v = run[i];
          sum[c] += v;
          sumsq[c] += v * v;
        }
      }
    }
  }
  Tensor* sum_out = Output(0);
  Tensor* sumsq_out = Output(1);
  sum_out->Resize({C});
  sumsq_out->Resize({C});
  T* sum_data = sum_out->mutable_data<T>();
  T* sumsq_data = sumsq_out->mutable_data<T>();
  for (int64_t c = 0; c < C; ++c) {
    sum_data[c] = static_cast<T>(sum[c]);
    sumsq_data[c] = static_cast<T>(sumsq[c]);
  }
}

REGISTER_CPU_OPERATOR(ChannelStats, ChannelStatsOp);

OPERATOR_SCHEMA(ChannelStats)
    .NumInputs(1)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
      const TensorShape& X = in.at(0);
      const bool channels_last =
          ArgumentHelper(def).GetSingle<std::string>("order", "NCHW") == "NHWC";
      TensorShape per_channel;
      per_channel.set_data_type(X.data_type());
      if (X.dims_size() >= 2) {
        per_channel.add_dims(X.dims(channels_last ? X.dims_size() - 1 : 1));
      }
      return std::vector<TensorShape>{per_channel, per_channel};
    })
    .Arg("order", "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"")
    .Input(0, "X", "input of rank >= 2, NCHW or NHWC (float32 or float64)")
    .Output(0, "sum", "per-channel sum of X, C elements")
    .Output(1, "sumsq", "per-channel sum of X squared, C elements")
    .Doc("Per-channel sum and sum of squares of X. Reduced over several batches "
         "they give SpatialBN (num_batches > 1) the mean and variance of all of "
         "them, which changes the batch size SpatialBN normalizes over.");

SHOULD_NOT_DO_GRADIENT(ChannelStats,
                       "it feeds SpatialBN's multi-batch statistics, whose gradient "
                       "SpatialBNGradient computes from ChannelBackpropStats instead");

}  // namespace doppio
