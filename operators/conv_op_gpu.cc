// Conv / ConvGradient on cuDNN (engine CUDNN, also the default on CUDA), as
// Caffe2's conv_op_cudnn.cc: descriptors from the op's arguments and input
// shapes, algorithms from cudnnGet*_v7 (or cudnnFind* with
// exhaustive_search=1), chosen once per shape and cached in the op, bounded
// by ws_nbytes_limit, deterministic-only with deterministic=1. Float32 stays
// exact (no TF32) unless enable_tensor_core=1.
#include "operators/conv_op_gpu.h"

#include <string>
#include <vector>

#include "core/registry.h"
#include "operators/conv_op.h"
#include "operators/cudnn_conv_op_base_gpu.h"

namespace doppio {

CudnnConvPlan ResolveCudnnConv(const ConvPoolArgs& args, const std::string& x_name,
                               const std::vector<int64_t>& x_dims, const std::string& w_name,
                               const std::vector<int64_t>& w_dims) {
  const std::string& op = args.op_type();
  DOPPIO_ENFORCE(x_dims.size() >= 3 && x_dims.size() <= 5, "op ", op,
                 ": the CUDA (cuDNN) Conv takes 3-D to 5-D inputs (1-D to 3-D images); input '",
                 x_name, "' has shape ", x_dims);
  DOPPIO_ENFORCE(w_dims.size() == x_dims.size(), "op ", op, ": filter '", w_name,
                 "' has shape ", w_dims, " but should have ", x_dims.size(),
                 " dims like input '", x_name, "' ", x_dims);
  const bool nchw = args.order() == StorageOrder::kNCHW;
  const std::vector<int64_t> filter_kernel(w_dims.begin() + (nchw ? 2 : 1),
                                           w_dims.end() - (nchw ? 0 : 1));
  CudnnConvPlan plan;
  plan.geometry = args.Resolve(x_dims, x_name, filter_kernel);
  const ConvPoolGeometry& g = plan.geometry;
  DOPPIO_ENFORCE(g.kernel == filter_kernel, "op ", op, ": the kernel argument ", g.kernel,
                 " does not match filter '", w_name, "' of shape ", w_dims);
  plan.group = args.group();
  plan.out_channels = w_dims[0];
  DOPPIO_ENFORCE(plan.group >= 1, "op ", op, ": group is ", plan.group, "; it must be >= 1");
  DOPPIO_ENFORCE(g.channels > 0 && g.channels % plan.group == 0, "op ", op, ": group ",
                 plan.group, " does not divide the ", g.channels, " channels of input '",
                 x_name, "'");
  DOPPIO_ENFORCE(plan.out_channels > 0 && plan.out_channels % plan.group == 0, "op ", op,
                 ": group ", plan.group, " does not divide the ", plan.out_channels,
                 " output channels of filter '", w_name, "'");
  plan.in_per_group = g.channels / plan.group;
  const int64_t filter_channels = nchw ? w_dims[1] : w_dims.back();
  DOPPIO_ENFORCE(filter_channels == plan.in_per_group, "op ", op, ": filter '", w_name,
                 "' of shape ", w_dims, " takes ", filter_channels,
                 " channels per group but input '", x_name, "' has ", g.channels,
                 " channels in ", plan.group, " group(s)");
  for (int axis = 0; axis < g.num_spatial(); ++axis) {
    DOPPIO_ENFORCE_SUPPORTED(g.pad_begin(axis) == g.pad_end(axis), "op ", op,
                             ": cuDNN needs equal begin and end pads per axis, got pads ", g.pads,
                             " for input '", x_name, "'");
  }
  plan.output_dims = g.OutputDims(plan.out_channels);

  std::vector<int64_t> input = g.input, kernel = g.kernel, output = g.output;
  std::vector<int64_t> pads(g.pads.begin(), g.pads.begin() + g.num_spatial());
  plan.strides = g.stride;
  plan.dilations = g.dilation;
  if (g.num_spatial() == 1) {
    // A unit axis in front: same memory layout in both orders.
    input.insert(input.begin(), 1);
    kernel.insert(kernel.begin(), 1);
    output.insert(output.begin(), 1);
    pads.insert(pads.begin(), 0);
    plan.strides.insert(plan.strides.begin(), 1);
    plan.dilations.insert(plan.dilations.begin(), 1);
  }
  plan.pads = pads;
  plan.cudnn_x_dims = {g.batch, g.channels};
  plan.cudnn_x_dims.insert(plan.cudnn_x_dims.end(), input.begin(), input.end());
  plan.cudnn_w_dims = {plan.out_channels, plan.in_per_group};
  plan.cudnn_w_dims.insert(plan.cudnn_w_dims.end(), kernel.begin(), kernel.end());
  plan.cudnn_y_dims = {g.batch, plan.out_channels};
  plan.cudnn_y_dims.insert(plan.cudnn_y_dims.end(), output.begin(), output.end());
  return plan;
}

namespace {

// What identifies a plan in the algorithm caches.
std::string CacheKey(const CudnnConvPlan& plan, DataType dtype) {
  const ConvPoolGeometry& g = plan.geometry;
  return MakeString(DataTypeName(dtype), ' ', StorageOrderName(g.order), " x", g.batch, ',',
                    g.channels, ',', g.input, " k", g.kernel, " s", g.stride, " p", g.pads, " d",
                    g.dilation, " m", plan.out_channels, " g", plan.group);
}

void EnforceConvTypes(const OperatorBase& op, const Tensor& X, const Tensor& filter) {
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat || X.dtype() == DataType::kDouble,
                 "the CUDA Conv takes float32 or float64; input '", op.input_name(0), "' holds ",
                 DataTypeName(X.dtype()));
  DOPPIO_ENFORCE(filter.dtype() == X.dtype(), "filter '", op.input_name(1), "' holds ",
                 DataTypeName(filter.dtype()), " but input '", op.input_name(0), "' holds ",
                 DataTypeName(X.dtype()));
}

class CudnnConvOp final : public CudnnConvOpBase {
 public:
  using CudnnConvOpBase::CudnnConvOpBase;

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& filter = Input(1);
    const Tensor* bias = InputSize() == 3 ? &Input(2) : nullptr;
    EnforceConvTypes(*this, X, filter);
    const CudnnConvPlan plan =
        ResolveCudnnConv(args_, input_name(0), X.dims(), input_name(1), filter.dims());
    if (bias != nullptr) CheckChannelBias(*this, X, *bias, plan.out_channels);
    Tensor* Y = Output(0);
    Y->Resize(plan.output_dims);
    // Typed even when empty, so an empty batch yields a float tensor.
    void* y = Y->raw_mutable_data(X.dtype());
    if (Y->numel() == 0) return;
    SetDescriptors(plan, plan.geometry.order, X.dtype());
    ConvolutionForward(CacheKey(plan, X.dtype()), x_desc_, X.raw_data(), filter.raw_data(),
                       y_desc_, y);
    if (bias != nullptr) AddBias(bias->raw_data(), y);
  }
};

class CudnnConvGradientOp final : public CudnnConvOpBase {
 public:
  CudnnConvGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudnnConvOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& filter = Input(1);
    const Tensor& dY = Input(2);
    EnforceConvTypes(*this, X, filter);
    const CudnnConvPlan plan =
        ResolveCudnnConv(args_, input_name(0), X.dims(), input_name(1), filter.dims());
    CheckOutputGradient(*this, X, dY, plan.output_dims, "the Conv output");
    const ConvGradientOutputs out = ResizeConvGradientOutputs(
        *this, no_bias_, X, filter, plan.out_channels, [&](int i) { return Output(i); });
    void* dw = out.dfilter->raw_mutable_data(X.dtype());
    void* db = out.dbias != nullptr ? out.dbias->raw_mutable_data(X.dtype()) : nullptr;
    void* dx = out.dX != nullptr ? out.dX->raw_mutable_data(X.dtype()) : nullptr;
    if (dY.numel() == 0 || X.numel() == 0) {
      ZeroOnDevice({out.dfilter, out.dbias, out.dX});
      return;
    }
    SetDescriptors(plan, plan.geometry.order, X.dtype());
    const std::string key = CacheKey(plan, X.dtype());
    const void* dy = dY.raw_data();
    ConvolutionBackwardFilter(key, x_desc_, X.raw_data(), y_desc_, dy, dw);
    if (db != nullptr) BiasGradient(dy, db);
    if (dx != nullptr) ConvolutionBackwardData(key, filter.raw_data(), y_desc_, dy, x_desc_, dx);
  }

 private:
  bool no_bias_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Conv, CudnnConvOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Conv, CUDNN, CudnnConvOp);
REGISTER_CUDA_OPERATOR(Conv2D, CudnnConvOp);
REGISTER_CUDA_OPERATOR(ConvGradient, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvGradient, CUDNN, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR(Conv2DGradient, CudnnConvGradientOp);

}  // namespace doppio
