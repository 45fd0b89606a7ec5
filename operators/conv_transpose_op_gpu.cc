// ConvTranspose / ConvTransposeGradient on cuDNN (engine CUDNN, also the
// default on CUDA), as Caffe2's conv_transpose_op_cudnn.cc: descriptors from
// the op's arguments and input shapes, algorithms from cudnnGet*_v7 (or
// cudnnFind* with exhaustive_search=1), chosen once per shape and cached in
// the op, bounded by ws_nbytes_limit, deterministic-only with
// deterministic=1. Float32 stays exact (no TF32) unless enable_tensor_core=1.
// shared_buffer is accepted and has no effect: scratch memory comes from the
// caching allocator.
#include "operators/conv_transpose_op_gpu.h"

#include <string>
#include <vector>

#include "core/argument.h"
#include "core/registry.h"
#include "operators/conv_op.h"
#include "operators/cudnn_conv_op_base_gpu.h"

namespace doppio {

CudnnConvTransposePlan ResolveCudnnConvTranspose(const ConvPoolArgs& args,
                                                 const ConvTransposeAdj& adj_arg,
                                                 const std::string& x_name,
                                                 const std::vector<int64_t>& x_dims,
                                                 const std::string& w_name,
                                                 const std::vector<int64_t>& w_dims) {
  const std::string& op = args.op_type();
  DOPPIO_ENFORCE(!args.global_pooling() &&
                     args.legacy_pad() != LegacyPadding::kCaffeLegacyPooling,
                 "op ", op, ": global_pooling and CAFFE_LEGACY_POOLING do not apply to ",
                 "transposed convolution");
  DOPPIO_ENFORCE(x_dims.size() >= 3 && x_dims.size() <= 5, "op ", op, ": input '", x_name,
                 "' has shape ", x_dims, "; expected 3 to 5 dims (",
                 StorageOrderName(args.order()), " with 1 to 3 spatial dims)");
  DOPPIO_ENFORCE(w_dims.size() == x_dims.size(), "op ", op, ": filter '", w_name,
                 "' has shape ", w_dims, " but input '", x_name, "' has shape ", x_dims,
                 "; the filter needs as many dims as the input");
  const int num_spatial = static_cast<int>(x_dims.size()) - 2;
  const bool nchw = args.order() == StorageOrder::kNCHW;

  CudnnConvTransposePlan plan;
  plan.order = args.order();
  plan.batch = x_dims[0];
  plan.in_channels = nchw ? x_dims[1] : x_dims.back();
  const std::vector<int64_t> input(x_dims.begin() + (nchw ? 2 : 1),
                                   x_dims.end() - (nchw ? 0 : 1));
  const std::vector<int64_t> kernel(w_dims.begin() + (nchw ? 2 : 1),
                                    w_dims.end() - (nchw ? 0 : 1));
  if (args.has_kernel_argument()) {
    const std::vector<int64_t> given = args.Kernel(num_spatial, x_name);
    DOPPIO_ENFORCE(given == kernel, "op ", op, ": the kernel argument ", given,
                   " does not match filter '", w_name, "' of shape ", w_dims);
  }
  for (int64_t k : kernel) {
    DOPPIO_ENFORCE(k > 0, "op ", op, ": filter '", w_name, "' of shape ", w_dims,
                   " has an empty kernel");
  }
  const std::vector<int64_t> stride = args.Stride(num_spatial, x_name);
  const std::vector<int64_t> dilation = args.Dilation(num_spatial, x_name);
  std::vector<int64_t> pads(2 * num_spatial, 0);
  // VALID and SAME mean no padding for a transposed convolution.
  if (args.legacy_pad() == LegacyPadding::kNotSet) pads = args.Pads(num_spatial, x_name);
  const std::vector<int64_t> adj = adj_arg.PerAxis(num_spatial, op, x_name);

  plan.group = args.group();
  DOPPIO_ENFORCE(plan.group >= 1, "op ", op, ": group is ", plan.group, "; it must be >= 1");
  DOPPIO_ENFORCE(plan.in_channels > 0 && plan.in_channels % plan.group == 0, "op ", op,
                 ": group ", plan.group, " does not divide the ", plan.in_channels,
                 " channels of input '", x_name, "'");
  DOPPIO_ENFORCE(w_dims[0] == plan.in_channels, "op ", op, ": filter '", w_name,
                 "' of shape ", w_dims, " is for ", w_dims[0], " input channels but input '",
                 x_name, "' has ", plan.in_channels);
  const int64_t out_per_group = nchw ? w_dims[1] : w_dims.back();
  DOPPIO_ENFORCE(out_per_group > 0, "op ", op, ": filter '", w_name, "' of shape ", w_dims,
                 " has no output channels");
  plan.out_channels = out_per_group * plan.group;

  std::vector<int64_t> output(num_spatial);
  for (int axis = 0; axis < num_spatial; ++axis) {
    const int64_t begin = pads[axis], end = pads[num_spatial + axis];
    DOPPIO_ENFORCE(adj[axis] <= stride[axis], "op ", op, ": adj ", adj[axis],
                   " of spatial dim ", axis, " exceeds its stride ", stride[axis]);
    const int64_t full =
        (input[axis] - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1 + adj[axis];
    output[axis] = full - begin - end;
    DOPPIO_ENFORCE(input[axis] > 0 && output[axis] > 0, "op ", op, ": input '", x_name,
                   "' of shape ", x_dims, " gives output size ", output[axis],
                   " on spatial dim ", axis, " (pads ", begin, " + ", end,
                   " remove all of it)");
    // With the begin pad on both sides, cuDNN's convolution of Y has size
    // floor(((in - 1) * stride + adj + begin - end) / stride) + 1, which is
    // X's size only in this range; outside it Y's trailing rows would have no
    // place in cuDNN's problem.
    const int64_t extra = adj[axis] + begin - end;
    DOPPIO_ENFORCE_SUPPORTED(extra >= 0 && extra < stride[axis], "op ", op,
                             ": the CUDA (cuDNN) ConvTranspose needs 0 <= adj + pad_begin - "
                             "pad_end < stride on each spatial dim; dim ",
                             axis, " has adj ", adj[axis], ", pads ", begin, " and ", end,
                             ", stride ", stride[axis], " (input '", x_name, "')");
  }
  plan.output_dims = {plan.batch};
  if (nchw) plan.output_dims.push_back(plan.out_channels);
  plan.output_dims.insert(plan.output_dims.end(), output.begin(), output.end());
  if (!nchw) plan.output_dims.push_back(plan.out_channels);

  std::vector<int64_t> in_spatial = input, kernel_spatial = kernel, out_spatial = output;
  plan.pads.assign(pads.begin(), pads.begin() + num_spatial);
  plan.strides = stride;
  plan.dilations = dilation;
  if (num_spatial == 1) {
    // A unit axis in front: same memory layout in both orders.
    in_spatial.insert(in_spatial.begin(), 1);
    kernel_spatial.insert(kernel_spatial.begin(), 1);
    out_spatial.insert(out_spatial.begin(), 1);
    plan.pads.insert(plan.pads.begin(), 0);
    plan.strides.insert(plan.strides.begin(), 1);
    plan.dilations.insert(plan.dilations.begin(), 1);
  }
  plan.cudnn_x_dims = {plan.batch, plan.in_channels};
  plan.cudnn_x_dims.insert(plan.cudnn_x_dims.end(), in_spatial.begin(), in_spatial.end());
  plan.cudnn_y_dims = {plan.batch, plan.out_channels};
  plan.cudnn_y_dims.insert(plan.cudnn_y_dims.end(), out_spatial.begin(), out_spatial.end());
  plan.cudnn_w_dims = {plan.in_channels, out_per_group};
  plan.cudnn_w_dims.insert(plan.cudnn_w_dims.end(), kernel_spatial.begin(),
                           kernel_spatial.end());
  return plan;
}

namespace {

// What identifies a plan in the algorithm caches.
std::string CacheKey(const CudnnConvTransposePlan& plan, DataType dtype) {
  return MakeString(DataTypeName(dtype), ' ', StorageOrderName(plan.order), " x",
                    plan.cudnn_x_dims, " y", plan.cudnn_y_dims, " w", plan.cudnn_w_dims, " s",
                    plan.strides, " p", plan.pads, " d", plan.dilations, " g", plan.group);
}

// cuDNN sees the op's Y as its convolution's input and X as its output:
// the forward pass is cuDNN's backward-data pass and vice versa.
class CudnnConvTransposeOpBase : public CudnnConvOpBase {
 public:
  CudnnConvTransposeOpBase(const OperatorDef& def, Workspace* workspace)
      : CudnnConvOpBase(def, workspace), adj_(def) {}

 protected:
  CudnnConvTransposePlan Plan(const Tensor& X, const Tensor& filter) const {
    DOPPIO_ENFORCE(X.dtype() == DataType::kFloat || X.dtype() == DataType::kDouble,
                   "the CUDA ConvTranspose takes float32 or float64; input '", input_name(0),
                   "' holds ", DataTypeName(X.dtype()));
    DOPPIO_ENFORCE(filter.dtype() == X.dtype(), "filter '", input_name(1), "' holds ",
                   DataTypeName(filter.dtype()), " but input '", input_name(0), "' holds ",
                   DataTypeName(X.dtype()));
    return ResolveCudnnConvTranspose(args_, adj_, input_name(0), X.dims(), input_name(1),
                                     filter.dims());
  }

  ConvTransposeAdj adj_;
};

class CudnnConvTransposeOp final : public CudnnConvTransposeOpBase {
 public:
  using CudnnConvTransposeOpBase::CudnnConvTransposeOpBase;

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& filter = Input(1);
    const Tensor* bias = InputSize() == 3 ? &Input(2) : nullptr;
    const CudnnConvTransposePlan plan = Plan(X, filter);
    if (bias != nullptr) CheckChannelBias(*this, X, *bias, plan.out_channels);
    Tensor* Y = Output(0);
    Y->Resize(plan.output_dims);
    // Typed even when empty, so an empty batch yields a float tensor.
    void* y = Y->raw_mutable_data(X.dtype());
    if (Y->numel() == 0) return;
    SetDescriptors(plan, plan.order, X.dtype());
    ConvolutionBackwardData(CacheKey(plan, X.dtype()), filter.raw_data(), x_desc_, X.raw_data(),
                            y_desc_, y);
    if (bias != nullptr) AddBias(bias->raw_data(), y);
  }
};

// Inputs X, filter, dY; outputs dfilter, then dbias unless no_bias, then dX
// when one more output is given (Caffe2's ordering).
class CudnnConvTransposeGradientOp final : public CudnnConvTransposeOpBase {
 public:
  CudnnConvTransposeGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudnnConvTransposeOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

  void RunCudnn() override {
    EnforceInputsOnDevice(*this, context_.device());
    const Tensor& X = Input(0);
    const Tensor& filter = Input(1);
    const Tensor& dY = Input(2);
    const CudnnConvTransposePlan plan = Plan(X, filter);
    CheckOutputGradient(*this, X, dY, plan.output_dims, "the transposed convolution's output");
    const ConvGradientOutputs out = ResizeConvGradientOutputs(
        *this, no_bias_, X, filter, plan.out_channels, [&](int i) { return Output(i); });
    void* dw = out.dfilter->raw_mutable_data(X.dtype());
    void* db = out.dbias != nullptr ? out.dbias->raw_mutable_data(X.dtype()) : nullptr;
    void* dx = out.dX != nullptr ? out.dX->raw_mutable_data(X.dtype()) : nullptr;
    if (dY.numel() == 0 || X.numel() == 0) {
      ZeroOnDevice({out.dfilter, out.dbias, out.dX});
      return;
    }
    SetDescriptors(plan, plan.order, X.dtype());
    const std::string key = CacheKey(plan, X.dtype());
    const void* dy = dY.raw_data();
    // dW: dY plays the convolution's input, X its output gradient.
    ConvolutionBackwardFilter(key, y_desc_, dy, x_desc_, X.raw_data(), dw);
    if (db != nullptr) BiasGradient(dy, db);
    // dX: the ordinary convolution of dY with the filter.
    if (dx != nullptr) ConvolutionForward(key, y_desc_, dy, filter.raw_data(), x_desc_, dx);
  }

 private:
  bool no_bias_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConvTranspose, CudnnConvTransposeOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvTranspose, CUDNN, CudnnConvTransposeOp);
REGISTER_CUDA_OPERATOR(ConvTransposeGradient, CudnnConvTransposeGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvTransposeGradient, CUDNN, CudnnConvTransposeGradientOp);

}  // namespace doppio
