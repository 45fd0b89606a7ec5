// SpatialBN / SpatialBNGradient on cuDNN (engine CUDNN, also the default on
// CUDA), as Caffe2's spatial_batch_norm_op_cudnn.cc. X of any rank >= 2 is
// viewed as N x C x inner x 1 (NCHW) or the NHWC equivalent, so 1-D to 3-D
// images share one path. Training updates the running statistics with
// Caffe2's momentum: running = momentum * running + (1 - momentum) * batch,
// the variance unbiased (cuDNN's exponentialAverageFactor = 1 - momentum
// does exactly that), and saves the batch mean and 1 / sqrt(var + epsilon)
// for the gradient.
#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/normalization_utils.h"
#include "operators/spatial_batch_norm_op.h"

namespace doppio {

namespace {

// The cuDNN view of X and its per-channel parameters.
class CudnnBNDescriptors {
 public:
  // Returns the channel view after setting the descriptors for X.
  ChannelView Set(const OperatorBase& op, const Tensor& X, bool channels_last) {
    DOPPIO_ENFORCE(X.dtype() == DataType::kFloat || X.dtype() == DataType::kDouble,
                   "the CUDA SpatialBN takes float32 or float64; input '", op.input_name(0),
                   "' holds ", DataTypeName(X.dtype()));
    const ChannelView view = ViewByChannel(op, 0, X, channels_last, 2);
    type_ = CudnnDataTypeOf(X.dtype(), op.type().c_str());
    x_.Set4d(channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, type_, view.batch,
             view.channels, view.inner, 1);
    DOPPIO_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(param_.get(), x_.get(), kMode));
    return view;
  }

  static constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;
  cudnnDataType_t type() const { return type_; }
  cudnnTensorDescriptor_t x() const { return x_.get(); }
  cudnnTensorDescriptor_t param() const { return param_.get(); }

 private:
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  CudnnTensorDescriptor x_;
  CudnnTensorDescriptor param_;
};

void ZeroFill(Tensor* t, DataType dtype, cudaStream_t stream) {
  void* data = t->raw_mutable_data(dtype);
  if (t->nbytes() > 0) DOPPIO_CUDA_CHECK(cudaMemsetAsync(data, 0, t->nbytes(), stream));
}

class CudnnSpatialBNOp final : public Operator<CUDAContext> {
 public:
  CudnnSpatialBNOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadSpatialBNArgs(*this)) {
    const int want = args_.is_test ? 1 : 5;
    DOPPIO_ENFORCE(OutputSize() == want, "with is_test=", args_.is_test ? 1 : 0, " it has ", want,
                   " output(s), got ", OutputSize());
    DOPPIO_ENFORCE(args_.num_batches == 1, "num_batches=", args_.num_batches,
                   " (aggregated statistics) runs on CPU only");
  }

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const ChannelView view = desc_.Set(*this, X, args_.channels_last);
    const int64_t C = view.channels;
    CheckParameter(*this, 1, Input(1), C, X.dtype(), "scale");
    CheckParameter(*this, 2, Input(2), C, X.dtype(), "bias");
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    void* y = Y->raw_mutable_data(X.dtype());
    const CudnnScalars s(desc_.type());
    cudnnHandle_t handle = context_.cudnn_handle();
    const cudaStream_t stream = context_.cuda_stream();
    if (args_.is_test) {
      CheckParameter(*this, 3, Input(3), C, X.dtype(), "mean");
      CheckParameter(*this, 4, Input(4), C, X.dtype(), "var");
      if (X.numel() == 0) return;
      DOPPIO_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          handle, CudnnBNDescriptors::kMode, s.one(), s.zero(), desc_.x(), X.raw_data(),
          desc_.x(), y, desc_.param(), Input(1).raw_data(), Input(2).raw_data(),
          Input(3).raw_data(), Input(4).raw_data(), args_.epsilon));
      return;
    }
    void* running_mean = RunningStatistic(Output(1), 3, C, X.dtype(), "running mean");
    void* running_var = RunningStatistic(Output(2), 4, C, X.dtype(), "running variance");
    Tensor* saved_mean = Output(3);
    Tensor* saved_inv_std = Output(4);
    saved_mean->Resize({C});
    saved_inv_std->Resize({C});
    if (view.batch * view.inner == 0) {
      // Nothing to normalize: no statistics, running ones unchanged (as on CPU).
      ZeroFill(saved_mean, X.dtype(), stream);
      ZeroFill(saved_inv_std, X.dtype(), stream);
      return;
    }
    DOPPIO_ENFORCE(view.batch * view.inner > 1,
                   "training needs more than one value per channel to estimate a variance, "
                   "but '",
                   input_name(0), "' has shape ", X.dims());
    DOPPIO_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        handle, CudnnBNDescriptors::kMode, s.one(), s.zero(), desc_.x(), X.raw_data(),
        desc_.x(), y, desc_.param(), Input(1).raw_data(), Input(2).raw_data(),
        1.0 - args_.momentum, running_mean, running_var, args_.epsilon,
        saved_mean->raw_mutable_data(X.dtype()), saved_inv_std->raw_mutable_data(X.dtype())));
  }

 private:
  // Running statistics start at zero when their blob is still empty (as on
  // CPU); otherwise they must already be per-channel of X's type.
  void* RunningStatistic(Tensor* running, int input, int64_t channels, DataType dtype,
                         const char* what) {
    if (running->numel() == 0) {
      running->Resize({channels});
      ZeroFill(running, dtype, context_.cuda_stream());
      return running->raw_mutable_data(dtype);
    }
    CheckParameter(*this, input, *running, channels, dtype, what);
    running->Resize({channels});
    return running->raw_mutable_data(dtype);
  }

  SpatialBNArgs args_;
  CudnnBNDescriptors desc_;
};

// Inputs X, scale, dY, saved_mean, saved_inv_std; outputs dX, dscale, dbias.
class CudnnSpatialBNGradientOp final : public Operator<CUDAContext> {
 public:
  CudnnSpatialBNGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), args_(ReadSpatialBNArgs(*this)) {
    DOPPIO_ENFORCE(!args_.is_test, "the gradient through is_test statistics runs on CPU only");
    DOPPIO_ENFORCE(args_.num_batches == 1, "num_batches=", args_.num_batches,
                   " (aggregated statistics) runs on CPU only");
  }

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& scale = Input(1);
    const Tensor& dY = Input(2);
    const ChannelView view = desc_.Set(*this, X, args_.channels_last);
    const int64_t C = view.channels;
    CheckParameter(*this, 1, scale, C, X.dtype(), "scale");
    DOPPIO_ENFORCE(dY.dims() == X.dims() && dY.dtype() == X.dtype(), "gradient '", input_name(2),
                   "' is ", dY.DebugString(), " but '", input_name(0), "' is ", X.DebugString());
    CheckParameter(*this, 3, Input(3), C, X.dtype(), "saved mean");
    CheckParameter(*this, 4, Input(4), C, X.dtype(), "saved inverse std");
    Tensor* dX = Output(0);
    Tensor* dscale = Output(1);
    Tensor* dbias = Output(2);
    dX->Resize(X.dims());
    dscale->Resize({C});
    dbias->Resize({C});
    if (X.numel() == 0) {
      const cudaStream_t stream = context_.cuda_stream();
      ZeroFill(dX, X.dtype(), stream);
      ZeroFill(dscale, X.dtype(), stream);
      ZeroFill(dbias, X.dtype(), stream);
      return;
    }
    const CudnnScalars s(desc_.type());
    DOPPIO_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        context_.cudnn_handle(), CudnnBNDescriptors::kMode, s.one(), s.zero(), s.one(),
        s.zero(), desc_.x(), X.raw_data(), desc_.x(), dY.raw_data(), desc_.x(),
        dX->raw_mutable_data(X.dtype()), desc_.param(), scale.raw_data(),
        dscale->raw_mutable_data(X.dtype()), dbias->raw_mutable_data(X.dtype()),
        args_.epsilon, Input(3).raw_data(), Input(4).raw_data()));
  }

 private:
  SpatialBNArgs args_;
  CudnnBNDescriptors desc_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(SpatialBN, CudnnSpatialBNOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(SpatialBN, CUDNN, CudnnSpatialBNOp);
REGISTER_CUDA_OPERATOR(SpatialBNGradient, CudnnSpatialBNGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(SpatialBNGradient, CUDNN, CudnnSpatialBNGradientOp);

}  // namespace doppio
