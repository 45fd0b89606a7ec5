#include "operators/channel_backprop_stats_op.h"

#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/normalization_utils.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

ChannelBackpropStatsOp::ChannelBackpropStatsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), channels_last_(ReadChannelsLast(*this)) {}

void ChannelBackpropStatsOp::RunOnDevice() {
  DispatchInput(FloatTypes{}, *this, 0, Input(0).dtype(),
                [&](auto tag) { Run<typename decltype(tag)::type>(); });
}

template <typename T>
void ChannelBackpropStatsOp::Run() {
  const Tensor& X = Input(0);
  const Tensor& dY = Input(3);
  const ChannelView view = ViewByChannel(*this, 0, X, channels_last_, 2);
  const int64_t N = view.batch, C = view.channels, inner = view.inner;
  CheckParameter(*this, 1, Input(1), C, X.dtype(), "mean");
  CheckParameter(*this, 2, Input(2), C, X.dtype(), "inverse std");
  DOPPIO_ENFORCE(dY.dims() == X.dims() && dY.dtype() == X.dtype(), "output gradient '",
                 input_name(3), "' is ", dY.DebugString(), " but '", input_name(0), "' is ",
                 X.DebugString());
  const T* x = X.data<T>();
  const T* dy = dY.data<T>();
  const T* mean = Input(1).data<T>();
  const T* inv_std = Input(2).data<T>();
  std::vector<double> dscale(C, 0.0), dbias(C, 0.0);
  if (channels_last_) {
    for (int64_t row = 0; row < N * inner; ++row) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t i = row * C + c;
        dbias[c] += dy[i];
        dscale[c] += static_cast<double>(dy[i]) * (x[i] - mean[c]);
      }
    }
  } else {
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t offset = (n * C + c) * inner;
        for (int64_t i = offset; i < offset + inner; ++i) {
          dbias[c] += dy[i];
          dscale[c] += static_cast<double>(dy[i]) * (x[i] - mean[c]);
        }
      }
    }
  }
  Tensor* dscale_out = Output(0);
  Tensor* dbias_out = Output(1);
  dscale_out->Resize({C});
  dbias_out->Resize({C});
  T* dscale_data = dscale_out->mutable_data<T>();
  T* dbias_data = dbias_out->mutable_data<T>();
  for (int64_t c = 0; c < C; ++c) {
    dscale_data[c] = static_cast<T>(dscale[c] * inv_std[c]);
    dbias_data[c] = static_cast<T>(dbias[c]);
  }
}

REGISTER_CPU_OPERATOR(ChannelBackpropStats, ChannelBackpropStatsOp);

OPERATOR_SCHEMA(ChannelBackpropStats)
    .NumInputs(4)
    .NumOutputs(2)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape per_channel = in.at(1);
      per_channel.set_data_type(in.at(0).data_type());
      return std::vector<TensorShape>{per_channel, per_channel};
    })
    .Arg("order",
         "(string, default \"NCHW\") \"NCHW\" or \"NHWC\"; Caffe2's op is NCHW only, "
         "this one follows SpatialBN's layouts")
    .Input(0, "X", "SpatialBN's input, rank >= 2 (float32 or float64)")
    .Input(1, "mean", "the mean SpatialBN saved in the forward pass, C elements")
    .Input(2, "inv_std", "the 1 / sqrt(var + epsilon) SpatialBN saved, C elements")
    .Input(3, "output_grad", "gradient of SpatialBN's output, X's shape")
    .Output(0, "scale_grad", "per-channel sum(dY * (X - mean) * inv_std)")
    .Output(1, "bias_grad", "per-channel sum(dY)")
    .Doc("SpatialBN's per-channel scale and bias gradient for one batch. Reduced over "
         "several batches and fed to SpatialBNGradient (num_batches > 1) they give "
         "the gradient of batch normalization over all of those batches.");

SHOULD_NOT_DO_GRADIENT(ChannelBackpropStats,
                       "it is part of SpatialBN's backward pass; second derivatives "
                       "are not supported");

}  // namespace doppio
