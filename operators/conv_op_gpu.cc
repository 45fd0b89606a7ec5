// Conv / ConvGradient on cuDNN (engine CUDNN, also the default on CUDA), as
// Caffe2's conv_op_cudnn.cc: descriptors from the op's arguments and input
// shapes, algorithms from cudnnGet*_v7 (or cudnnFind* with
// exhaustive_search=1), chosen once per shape and cached in the op, bounded
// by ws_nbytes_limit, deterministic-only with deterministic=1. Float32 stays
// exact (no TF32) unless enable_tensor_core=1.
#include "operators/conv_op_gpu.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/conv_op.h"
#include "operators/cudnn_descriptors_gpu.h"

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
    DOPPIO_ENFORCE(g.pad_begin(axis) == g.pad_end(axis), "op ", op,
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

cudnnTensorFormat_t FormatOf(StorageOrder order) {
  return order == StorageOrder::kNCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
}

// What both passes share: arguments, descriptors for the current shape,
// cached algorithm choices and the workspace.
class CudnnConvOpBase : public Operator<CUDAContext> {
 public:
  CudnnConvOpBase(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(def),
        ws_nbytes_limit_(
            GetSingleArgument<int64_t>("ws_nbytes_limit", kDefaultCudnnWorkspaceLimitBytes)),
        exhaustive_search_(GetSingleArgument<bool>("exhaustive_search", false)),
        deterministic_(GetSingleArgument<bool>("deterministic", false)),
        enable_tensor_core_(GetSingleArgument<bool>("enable_tensor_core", false)) {
    DOPPIO_ENFORCE(ws_nbytes_limit_ >= 0, "op ", DisplayName(), ": ws_nbytes_limit is ",
                   ws_nbytes_limit_, "; it must be >= 0");
  }

 protected:
  // Sets the descriptors for `plan` and returns the key that identifies it
  // in the algorithm caches.
  std::string SetDescriptors(const CudnnConvPlan& plan, DataType dtype) {
    type_ = CudnnDataTypeOf(dtype, DisplayName().c_str());
    const ConvPoolGeometry& g = plan.geometry;
    const cudnnTensorFormat_t format = FormatOf(g.order);
    x_desc_.SetNd(format, type_, plan.cudnn_x_dims);
    y_desc_.SetNd(format, type_, plan.cudnn_y_dims);
    std::vector<int64_t> bias_dims(plan.cudnn_y_dims.size(), 1);
    bias_dims[1] = plan.out_channels;
    bias_desc_.SetNd(format, type_, bias_dims);
    w_desc_.SetNd(format, type_, plan.cudnn_w_dims);
    conv_desc_.SetNd(plan.pads, plan.strides, plan.dilations, type_,
                     static_cast<int>(plan.group), DefaultMath());
    return MakeString(DataTypeName(dtype), ' ', StorageOrderName(g.order), " x", g.batch, ',',
                      g.channels, ',', g.input, " k", g.kernel, " s", g.stride, " p", g.pads,
                      " d", g.dilation, " m", plan.out_channels, " g", plan.group);
  }

  cudnnMathType_t DefaultMath() const {
    return enable_tensor_core_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  }

  // Runs the chosen algorithm with the math type it was chosen for (FMA
  // unless tensor cores are allowed).
  void UseMath(cudnnMathType_t chosen) {
    DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(),
                                                   enable_tensor_core_ ? chosen : CUDNN_FMA_MATH));
  }

  template <typename Perf>
  Perf Pick(const std::vector<Perf>& perfs, int returned, const char* pass) const {
    std::vector<Perf> valid(perfs.begin(), perfs.begin() + std::max(returned, 0));
    return PickCudnnAlgorithm(valid, static_cast<size_t>(ws_nbytes_limit_), deterministic_,
                              enable_tensor_core_, DisplayName(), pass);
  }

  // Scratch memory from the CUDA caching allocator, on the op's stream.
  void* Scratch(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    workspace_.Resize({static_cast<int64_t>(nbytes)});
    return workspace_.raw_mutable_data(DataType::kUint8);
  }

  ConvPoolArgs args_;
  int64_t ws_nbytes_limit_;
  bool exhaustive_search_;
  bool deterministic_;
  bool enable_tensor_core_;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  CudnnTensorDescriptor x_desc_, y_desc_, bias_desc_;
  CudnnFilterDescriptor w_desc_;
  CudnnConvolutionDescriptor conv_desc_;
  Tensor workspace_{context_.device()};
};

void EnforceConvTypes(const OperatorBase& op, const Tensor& X, const Tensor& filter) {
  DOPPIO_ENFORCE(X.dtype() == DataType::kFloat || X.dtype() == DataType::kDouble, "op ",
                 op.type(), ": the CUDA Conv takes float32 or float64; input '",
                 op.input_name(0), "' holds ", DataTypeName(X.dtype()));
  DOPPIO_ENFORCE(filter.dtype() == X.dtype(), "op ", op.type(), ": filter '", op.input_name(1),
                 "' holds ", DataTypeName(filter.dtype()), " but input '", op.input_name(0),
                 "' holds ", DataTypeName(X.dtype()));
}

class CudnnConvOp final : public CudnnConvOpBase {
 public:
  using CudnnConvOpBase::CudnnConvOpBase;

  void RunOnDevice() override {
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
    if (Y->numel() == 0) return;
    const std::string key = SetDescriptors(plan, X.dtype());
    cudnnHandle_t handle = context_.cudnn_handle();
    const void* x = X.raw_data();
    const void* w = filter.raw_data();
    void* y = Y->raw_mutable_data(X.dtype());

    auto found = algorithms_.find(key);
    if (found == algorithms_.end()) {
      int count = 0;
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(count, 1));
      int returned = 0;
      if (exhaustive_search_) {
        void* scratch = Scratch(static_cast<size_t>(ws_nbytes_limit_));
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            handle, x_desc_.get(), x, w_desc_.get(), w, conv_desc_.get(), y_desc_.get(), y,
            count, &returned, perfs.data(), scratch, static_cast<size_t>(ws_nbytes_limit_)));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), count,
            &returned, perfs.data()));
      }
      found = algorithms_.emplace(key, Pick(perfs, returned, "forward")).first;
    }
    const cudnnConvolutionFwdAlgoPerf_t& algo = found->second;
    UseMath(algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionForward(handle, s.one(), x_desc_.get(), x, w_desc_.get(),
                                               w, conv_desc_.get(), algo.algo, scratch,
                                               ws_bytes, s.zero(), y_desc_.get(), y));
    if (bias != nullptr) {
      DOPPIO_CUDNN_CHECK(cudnnAddTensor(handle, s.one(), bias_desc_.get(), bias->raw_data(),
                                        s.one(), y_desc_.get(), y));
    }
  }

 private:
  std::map<std::string, cudnnConvolutionFwdAlgoPerf_t> algorithms_;
};

class CudnnConvGradientOp final : public CudnnConvOpBase {
 public:
  CudnnConvGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudnnConvOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

  void RunOnDevice() override {
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
    const CudnnScalars s(CudnnDataTypeOf(X.dtype(), DisplayName().c_str()));
    if (dY.numel() == 0 || X.numel() == 0) {
      // Nothing flows back; gradients of an empty batch are zero.
      for (Tensor* t : {out.dfilter, out.dbias, out.dX}) {
        if (t != nullptr && t->nbytes() > 0) {
          DOPPIO_CUDA_CHECK(cudaMemsetAsync(t->raw_mutable_data(), 0, t->nbytes(),
                                            context_.cuda_stream()));
        }
      }
      return;
    }
    const std::string key = SetDescriptors(plan, X.dtype());
    cudnnHandle_t handle = context_.cudnn_handle();
    const void* x = X.raw_data();
    const void* w = filter.raw_data();
    const void* dy = dY.raw_data();

    const cudnnConvolutionBwdFilterAlgoPerf_t filter_algo = FilterAlgorithm(key, x, dy, dw);
    UseMath(filter_algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), filter_algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, s.one(), x_desc_.get(), x, y_desc_.get(), dy, conv_desc_.get(), filter_algo.algo,
        scratch, ws_bytes, s.zero(), w_desc_.get(), dw));
    if (db != nullptr) {
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, s.one(), y_desc_.get(), dy,
                                                      s.zero(), bias_desc_.get(), db));
    }
    if (dx != nullptr) {
      const cudnnConvolutionBwdDataAlgoPerf_t data_algo = DataAlgorithm(key, w, dy, dx);
      UseMath(data_algo.mathType);
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(), data_algo.algo,
          &ws_bytes));
      scratch = Scratch(ws_bytes);
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardData(
          handle, s.one(), w_desc_.get(), w, y_desc_.get(), dy, conv_desc_.get(), data_algo.algo,
          scratch, ws_bytes, s.zero(), x_desc_.get(), dx));
    }
  }

 private:
  cudnnConvolutionBwdFilterAlgoPerf_t FilterAlgorithm(const std::string& key, const void* x,
                                                      const void* dy, void* dw) {
    auto found = filter_algorithms_.find(key);
    if (found != filter_algorithms_.end()) return found->second;
    cudnnHandle_t handle = context_.cudnn_handle();
    int count = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(std::max(count, 1));
    int returned = 0;
    if (exhaustive_search_) {
      void* scratch = Scratch(static_cast<size_t>(ws_nbytes_limit_));
      DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          handle, x_desc_.get(), x, y_desc_.get(), dy, conv_desc_.get(), w_desc_.get(), dw,
          count, &returned, perfs.data(), scratch, static_cast<size_t>(ws_nbytes_limit_)));
    } else {
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, x_desc_.get(), y_desc_.get(), conv_desc_.get(), w_desc_.get(), count,
          &returned, perfs.data()));
    }
    return filter_algorithms_.emplace(key, Pick(perfs, returned, "backward-filter"))
        .first->second;
  }

  cudnnConvolutionBwdDataAlgoPerf_t DataAlgorithm(const std::string& key, const void* w,
                                                  const void* dy, void* dx) {
    auto found = data_algorithms_.find(key);
    if (found != data_algorithms_.end()) return found->second;
    cudnnHandle_t handle = context_.cudnn_handle();
    int count = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(count, 1));
    int returned = 0;
    if (exhaustive_search_) {
      void* scratch = Scratch(static_cast<size_t>(ws_nbytes_limit_));
      DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          handle, w_desc_.get(), w, y_desc_.get(), dy, conv_desc_.get(), x_desc_.get(), dx,
          count, &returned, perfs.data(), scratch, static_cast<size_t>(ws_nbytes_limit_)));
    } else {
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, w_desc_.get(), y_desc_.get(), conv_desc_.get(), x_desc_.get(), count,
          &returned, perfs.data()));
    }
    return data_algorithms_.emplace(key, Pick(perfs, returned, "backward-data")).first->second;
  }

  bool no_bias_;
  std::map<std::string, cudnnConvolutionBwdFilterAlgoPerf_t> filter_algorithms_;
  std::map<std::string, cudnnConvolutionBwdDataAlgoPerf_t> data_algorithms_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(Conv, CudnnConvOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Conv, CUDNN, CudnnConvOp);
REGISTER_CUDA_OPERATOR(Conv2D, CudnnConvOp);
REGISTER_CUDA_OPERATOR(ConvGradient, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvGradient, CUDNN, CudnnConvGradientOp);
REGISTER_CUDA_OPERATOR(Conv2DGradient, CudnnConvGradientOp);

}  // namespace doppio
