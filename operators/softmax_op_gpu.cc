// Softmax / LogSoftmax and their gradients on cuDNN (engine CUDNN, also the
// default on CUDA), as Caffe2's softmax_op_cudnn.cc: the input, split at
// `axis` into [rows, cols], is an N x C x 1 x 1 tensor normalized per row
// (CUDNN_SOFTMAX_MODE_INSTANCE) with the max-subtracting ACCURATE algorithm.
#include <string>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/activation_ops.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/softmax_op.h"

namespace doppio {

namespace {

template <bool kLog>
class CudnnSoftmaxOp final : public Operator<CUDAContext> {
 public:
  CudnnSoftmaxOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), axis_(ReadSoftmaxAxis(*this)) {}

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    EnforceInputType(FloatTypes{}, *this, 0, X.dtype());
    const RowsAndCols shape = SplitAtAxis(*this, input_name(0), X, axis_);
    Tensor* Y = Output(0);
    Y->Resize(X.dims());
    if (X.numel() == 0) return;
    const cudnnDataType_t data_type = CudnnDataTypeOf(X.dtype(), type().c_str());
    desc_.Set4d(CUDNN_TENSOR_NCHW, data_type, shape.rows, shape.cols, 1, 1);
    const CudnnScalars s(data_type);
    DOPPIO_CUDNN_CHECK(cudnnSoftmaxForward(
        context_.cudnn_handle(), kLog ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
        CUDNN_SOFTMAX_MODE_INSTANCE, s.one(), desc_.get(), X.raw_data(), s.zero(), desc_.get(),
        Y->raw_mutable_data(X.dtype())));
  }

 private:
  int axis_;
  CudnnTensorDescriptor desc_;
};

// Inputs Y, dY; output dX.
template <bool kLog>
class CudnnSoftmaxGradientOp final : public Operator<CUDAContext> {
 public:
  CudnnSoftmaxGradientOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), axis_(ReadSoftmaxAxis(*this)) {}

  void RunOnDevice() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& Y = Input(0);
    const Tensor& dY = Input(1);
    EnforceInputType(FloatTypes{}, *this, 0, Y.dtype());
    activation::CheckGradientMatchesOutput(*this, Y, dY);
    const RowsAndCols shape = SplitAtAxis(*this, input_name(0), Y, axis_);
    Tensor* dX = Output(0);
    dX->Resize(Y.dims());
    if (Y.numel() == 0) return;
    const cudnnDataType_t data_type = CudnnDataTypeOf(Y.dtype(), type().c_str());
    desc_.Set4d(CUDNN_TENSOR_NCHW, data_type, shape.rows, shape.cols, 1, 1);
    const CudnnScalars s(data_type);
    DOPPIO_CUDNN_CHECK(cudnnSoftmaxBackward(
        context_.cudnn_handle(), kLog ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
        CUDNN_SOFTMAX_MODE_INSTANCE, s.one(), desc_.get(), Y.raw_data(), desc_.get(),
        dY.raw_data(), s.zero(), desc_.get(), dX->raw_mutable_data(Y.dtype())));
  }

 private:
  int axis_;
  CudnnTensorDescriptor desc_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Softmax, CudnnSoftmaxOp<false>);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Softmax, CUDNN, CudnnSoftmaxOp<false>);
REGISTER_CUDA_OPERATOR(SoftmaxGradient, CudnnSoftmaxGradientOp<false>);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(SoftmaxGradient, CUDNN, CudnnSoftmaxGradientOp<false>);
REGISTER_CUDA_OPERATOR(LogSoftmax, CudnnSoftmaxOp<true>);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(LogSoftmax, CUDNN, CudnnSoftmaxOp<true>);
REGISTER_CUDA_OPERATOR(LogSoftmaxGradient, CudnnSoftmaxGradientOp<true>);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(LogSoftmaxGradient, CUDNN, CudnnSoftmaxGradientOp<true>);

}  // namespace doppio
