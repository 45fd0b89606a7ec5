// MaxPool / AveragePool and their gradients on cuDNN (engine CUDNN, also the
// default on CUDA), as Caffe2's pool_op_cudnn.cc. `deterministic=1` picks
// cuDNN's deterministic max pooling; count_include_pad picks the average
// mode, as on CPU.
#include "operators/pool_op_gpu.h"

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/cuda/cuda_fallback_op.h"
#include "core/registry.h"
#include "operators/cudnn_descriptors_gpu.h"
#include "operators/pool_op.h"

namespace doppio {

CudnnPoolPlan ResolveCudnnPool(const ConvPoolArgs& args, const std::string& x_name,
                               const std::vector<int64_t>& x_dims) {
  const std::string& op = args.op_type();
  DOPPIO_ENFORCE_SUPPORTED(x_dims.size() == 4, "op ", op,
                           ": the CUDA (cuDNN) pooling takes 4-D inputs (2-D images); input '",
                           x_name, "' has shape ", x_dims);
  CudnnPoolPlan plan;
  plan.geometry = args.Resolve(x_dims, x_name);
  const ConvPoolGeometry& g = plan.geometry;
  for (int axis = 0; axis < 2; ++axis) {
    DOPPIO_ENFORCE_SUPPORTED(g.dilation[axis] == 1, "op ", op,
                             ": cuDNN pooling has no dilation, got ", g.dilation);
    DOPPIO_ENFORCE_SUPPORTED(g.pad_begin(axis) == g.pad_end(axis), "op ", op,
                             ": cuDNN needs equal begin and end pads per axis, got pads ", g.pads,
                             " for input '", x_name, "'");
    DOPPIO_ENFORCE(args.global_pooling() || g.pad_begin(axis) < g.kernel[axis], "op ", op,
                   ": pads ", g.pads, " must be smaller than the kernel ", g.kernel);
  }
  plan.output_dims = g.OutputDims(g.channels);
  return plan;
}

namespace {

enum class CudnnPoolKind { kMax, kAverage };

class CudnnPoolOpBase : public Operator<CUDAContext> {
 public:
  CudnnPoolOpBase(const OperatorDef& def, Workspace* workspace, CudnnPoolKind kind)
      : Operator<CUDAContext>(def, workspace), args_(def) {
    if (kind == CudnnPoolKind::kMax) {
      mode_ = GetSingleArgument<bool>("deterministic", false) ? CUDNN_POOLING_MAX_DETERMINISTIC
                                                              : CUDNN_POOLING_MAX;
    } else {
      mode_ = ReadCountIncludePad(*this) ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                         : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    }
  }

  // The cuDNN path, or the CPU kernel through the CUDA fallback where cuDNN
  // cannot take the problem (NotImplementedError from the plan).
  void RunOnDevice() final {
    try {
      RunCudnn();
    } catch (const NotImplementedError&) {
      cpu_fallback_.Run(*this, context_);
    }
  }

 protected:
  virtual void RunCudnn() = 0;

  // Validates X and sets the descriptors; returns the plan.
  CudnnPoolPlan Prepare(const Tensor& X) {
    EnforceInputType(FloatTypes{}, *this, 0, X.dtype());
    DOPPIO_ENFORCE_SUPPORTED(OutputSize() == 1, "op ", type(),
                             ": cuDNN pooling gives no Indices output");
    const CudnnPoolPlan plan = ResolveCudnnPool(args_, input_name(0), X.dims());
    const ConvPoolGeometry& g = plan.geometry;
    type_ = CudnnDataTypeOf(X.dtype(), type().c_str());
    const cudnnTensorFormat_t format =
        g.order == StorageOrder::kNCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    x_desc_.Set4d(format, type_, g.batch, g.channels, g.input[0], g.input[1]);
    y_desc_.Set4d(format, type_, g.batch, g.channels, g.output[0], g.output[1]);
    pool_desc_.Set2d(mode_, g.kernel[0], g.kernel[1], g.pad_begin(0), g.pad_begin(1),
                     g.stride[0], g.stride[1]);
    return plan;
  }

  ConvPoolArgs args_;
  cudnnPoolingMode_t mode_;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  CudnnTensorDescriptor x_desc_, y_desc_;
  CudnnPoolingDescriptor pool_desc_;
  CudaCpuFallback cpu_fallback_;
};

template <CudnnPoolKind kKind>
class CudnnPoolOp final : public CudnnPoolOpBase {
 public:
  CudnnPoolOp(const OperatorDef& def, Workspace* workspace)
      : CudnnPoolOpBase(def, workspace, kKind) {}

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const CudnnPoolPlan plan = Prepare(X);
    Tensor* Y = Output(0);
    Y->Resize(plan.output_dims);
    if (Y->numel() == 0) return;
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnPoolingForward(context_.cudnn_handle(), pool_desc_.get(), s.one(),
                                           x_desc_.get(), X.raw_data(), s.zero(),
                                           y_desc_.get(), Y->raw_mutable_data(X.dtype())));
  }
};

// Inputs X, Y, dY; output dX.
template <CudnnPoolKind kKind>
class CudnnPoolGradientOp final : public CudnnPoolOpBase {
 public:
  CudnnPoolGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudnnPoolOpBase(def, workspace, kKind) {}

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& Y = Input(1);
    const Tensor& dY = Input(2);
    const CudnnPoolPlan plan = Prepare(X);
    for (int k = 1; k <= 2; ++k) {
      const Tensor& t = Input(k);
      DOPPIO_ENFORCE(t.dims() == plan.output_dims && t.dtype() == X.dtype(), "input ", k, " ('",
                     input_name(k), "') is ", DataTypeName(t.dtype()), " of shape ", t.dims(),
                     " but the pooled output of '", input_name(0), "' is ", DataTypeName(X.dtype()),
                     " of shape ", plan.output_dims);
    }
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    if (dX->numel() == 0) return;
    void* dx = dX->raw_mutable_data(X.dtype());
    if (dY.numel() == 0) {
      DOPPIO_CUDA_CHECK(cudaMemsetAsync(dx, 0, dX->nbytes(), context_.cuda_stream()));
      return;
    }
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnPoolingBackward(context_.cudnn_handle(), pool_desc_.get(), s.one(),
                                            y_desc_.get(), Y.raw_data(), y_desc_.get(),
                                            dY.raw_data(), x_desc_.get(), X.raw_data(),
                                            s.zero(), x_desc_.get(), dx));
  }
};

using CudnnMaxPoolOp = CudnnPoolOp<CudnnPoolKind::kMax>;
using CudnnAveragePoolOp = CudnnPoolOp<CudnnPoolKind::kAverage>;
using CudnnMaxPoolGradientOp = CudnnPoolGradientOp<CudnnPoolKind::kMax>;
using CudnnAveragePoolGradientOp = CudnnPoolGradientOp<CudnnPoolKind::kAverage>;

}  // namespace

REGISTER_CUDA_OPERATOR(MaxPool, CudnnMaxPoolOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(MaxPool, CUDNN, CudnnMaxPoolOp);
REGISTER_CUDA_OPERATOR(MaxPool2D, CudnnMaxPoolOp);
REGISTER_CUDA_OPERATOR(AveragePool, CudnnAveragePoolOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(AveragePool, CUDNN, CudnnAveragePoolOp);
REGISTER_CUDA_OPERATOR(AveragePool2D, CudnnAveragePoolOp);
REGISTER_CUDA_OPERATOR(MaxPoolGradient, CudnnMaxPoolGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(MaxPoolGradient, CUDNN, CudnnMaxPoolGradientOp);
REGISTER_CUDA_OPERATOR(MaxPool2DGradient, CudnnMaxPoolGradientOp);
REGISTER_CUDA_OPERATOR(AveragePoolGradient, CudnnAveragePoolGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(AveragePoolGradient, CUDNN, CudnnAveragePoolGradientOp);
REGISTER_CUDA_OPERATOR(AveragePool2DGradient, CudnnAveragePoolGradientOp);

}  // namespace doppio
