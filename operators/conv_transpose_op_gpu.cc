// ConvTranspose / ConvTransposeGradient on cuDNN (engine CUDNN, also the
// default on CUDA), as Caffe2's conv_transpose_op_cudnn.cc: descriptors from
// the op's arguments and input shapes, algorithms from cudnnGet*_v7 (or
// cudnnFind* with exhaustive_search=1), chosen once per shape and cached in
// the op, bounded by ws_nbytes_limit, deterministic-only with
// deterministic=1. Float32 stays exact (no TF32) unless enable_tensor_core=1.
// shared_buffer is accepted and has no effect: scratch memory comes from the
// caching allocator.
#include "operators/conv_transpose_op_gpu.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/argument.h"
#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/registry.h"
#include "operators/conv_op.h"
#include "operators/conv_op_gpu.h"
#include "operators/cudnn_descriptors_gpu.h"

namespace doppio {

ConvTransposeAdj::ConvTransposeAdj(const OperatorDef& def) {
  const ArgumentHelper args(def);
  const bool has_hw = args.Has("adj_h") || args.Has("adj_w");
  const int forms = (args.Has("adj") ? 1 : 0) + (args.Has("adjs") ? 1 : 0) + (has_hw ? 1 : 0);
  DOPPIO_ENFORCE(forms <= 1, "op ", def.type(),
                 ": give only one of 'adj', 'adjs' and adj_h/adj_w");
  if (args.Has("adj")) {
    values_ = {args.GetSingle<int64_t>("adj", 0)};
    scalar_ = true;
  } else if (args.Has("adjs")) {
    values_ = args.GetRepeated<int64_t>("adjs");
  } else if (has_hw) {
    DOPPIO_ENFORCE(args.Has("adj_h") && args.Has("adj_w"), "op ", def.type(),
                   ": give both adj_h and adj_w or neither");
    values_ = {args.GetSingle<int64_t>("adj_h", 0), args.GetSingle<int64_t>("adj_w", 0)};
  }
  for (int64_t value : values_) {
    DOPPIO_ENFORCE(value >= 0, "op ", def.type(), ": adj values must be >= 0, got ", values_);
  }
}

std::vector<int64_t> ConvTransposeAdj::PerAxis(int num_spatial, const std::string& op,
                                               const std::string& input_name) const {
  if (values_.empty()) return std::vector<int64_t>(num_spatial, 0);
  if (scalar_) return std::vector<int64_t>(num_spatial, values_[0]);
  DOPPIO_ENFORCE(static_cast<int>(values_.size()) == num_spatial, "op ", op, ": adj values ",
                 values_, " do not fit input '", input_name, "' with ", num_spatial,
                 " spatial dims");
  return values_;
}

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
    DOPPIO_ENFORCE(extra >= 0 && extra < stride[axis], "op ", op,
                   ": the CUDA (cuDNN) ConvTranspose needs 0 <= adj + pad_begin - pad_end < "
                   "stride on each spatial dim; dim ",
                   axis, " has adj ", adj[axis], ", pads ", begin, " and ", end, ", stride ",
                   stride[axis], " (input '", x_name, "'); run it on the CPU instead");
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

// What both passes share: arguments, descriptors for the current shape,
// cached algorithm choices and the workspace.
class CudnnConvTransposeOpBase : public Operator<CUDAContext> {
 public:
  CudnnConvTransposeOpBase(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        args_(def),
        adj_(def),
        ws_nbytes_limit_(
            GetSingleArgument<int64_t>("ws_nbytes_limit", kDefaultCudnnWorkspaceLimitBytes)),
        exhaustive_search_(GetSingleArgument<bool>("exhaustive_search", false)),
        deterministic_(GetSingleArgument<bool>("deterministic", false)),
        enable_tensor_core_(GetSingleArgument<bool>("enable_tensor_core", false)) {
    DOPPIO_ENFORCE(ws_nbytes_limit_ >= 0, "op ", DisplayName(), ": ws_nbytes_limit is ",
                   ws_nbytes_limit_, "; it must be >= 0");
  }

 protected:
  CudnnConvTransposePlan Plan(const Tensor& X, const Tensor& filter) const {
    DOPPIO_ENFORCE(X.dtype() == DataType::kFloat || X.dtype() == DataType::kDouble, "op ",
                   DisplayName(), ": the CUDA ConvTranspose takes float32 or float64; input '",
                   input_name(0), "' holds ", DataTypeName(X.dtype()));
    DOPPIO_ENFORCE(filter.dtype() == X.dtype(), "op ", DisplayName(), ": filter '",
                   input_name(1), "' holds ", DataTypeName(filter.dtype()), " but input '",
                   input_name(0), "' holds ", DataTypeName(X.dtype()));
    return ResolveCudnnConvTranspose(args_, adj_, input_name(0), X.dims(), input_name(1),
                                     filter.dims());
  }

  // Sets the descriptors for `plan` and returns the key that identifies it
  // in the algorithm caches.
  std::string SetDescriptors(const CudnnConvTransposePlan& plan, DataType dtype) {
    type_ = CudnnDataTypeOf(dtype, DisplayName().c_str());
    const cudnnTensorFormat_t format =
        plan.order == StorageOrder::kNCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    x_desc_.SetNd(format, type_, plan.cudnn_x_dims);
    y_desc_.SetNd(format, type_, plan.cudnn_y_dims);
    std::vector<int64_t> bias_dims(plan.cudnn_y_dims.size(), 1);
    bias_dims[1] = plan.out_channels;
    bias_desc_.SetNd(format, type_, bias_dims);
    w_desc_.SetNd(format, type_, plan.cudnn_w_dims);
    conv_desc_.SetNd(plan.pads, plan.strides, plan.dilations, type_,
                     static_cast<int>(plan.group), DefaultMath());
    return MakeString(DataTypeName(dtype), ' ', StorageOrderName(plan.order), " x",
                      plan.cudnn_x_dims, " y", plan.cudnn_y_dims, " w", plan.cudnn_w_dims, " s",
                      plan.strides, " p", plan.pads, " d", plan.dilations, " g", plan.group);
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
  size_t SearchLimit() const { return static_cast<size_t>(ws_nbytes_limit_); }

  ConvPoolArgs args_;
  ConvTransposeAdj adj_;
  int64_t ws_nbytes_limit_;
  bool exhaustive_search_;
  bool deterministic_;
  bool enable_tensor_core_;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  // x_desc_ / y_desc_ describe the op's X and Y (cuDNN's convolution output
  // and input respectively).
  CudnnTensorDescriptor x_desc_, y_desc_, bias_desc_;
  CudnnFilterDescriptor w_desc_;
  CudnnConvolutionDescriptor conv_desc_;
  Tensor workspace_{context_.device()};
};

class CudnnConvTransposeOp final : public CudnnConvTransposeOpBase {
 public:
  using CudnnConvTransposeOpBase::CudnnConvTransposeOpBase;

  void RunOnDevice() override {
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
    const std::string key = SetDescriptors(plan, X.dtype());
    cudnnHandle_t handle = context_.cudnn_handle();
    const void* x = X.raw_data();
    const void* w = filter.raw_data();

    auto found = algorithms_.find(key);
    if (found == algorithms_.end()) {
      int count = 0;
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(count, 1));
      int returned = 0;
      if (exhaustive_search_) {
        void* scratch = Scratch(SearchLimit());
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            handle, w_desc_.get(), w, x_desc_.get(), x, conv_desc_.get(), y_desc_.get(), y,
            count, &returned, perfs.data(), scratch, SearchLimit()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, w_desc_.get(), x_desc_.get(), conv_desc_.get(), y_desc_.get(), count,
            &returned, perfs.data()));
      }
      found = algorithms_.emplace(key, Pick(perfs, returned, "backward-data")).first;
    }
    const cudnnConvolutionBwdDataAlgoPerf_t& algo = found->second;
    UseMath(algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, w_desc_.get(), x_desc_.get(), conv_desc_.get(), y_desc_.get(), algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, s.one(), w_desc_.get(), w, x_desc_.get(), x, conv_desc_.get(), algo.algo,
        scratch, ws_bytes, s.zero(), y_desc_.get(), y));
    if (bias != nullptr) {
      DOPPIO_CUDNN_CHECK(cudnnAddTensor(handle, s.one(), bias_desc_.get(), bias->raw_data(),
                                        s.one(), y_desc_.get(), y));
    }
  }

 private:
  std::map<std::string, cudnnConvolutionBwdDataAlgoPerf_t> algorithms_;
};

// Inputs X, filter, dY; outputs dfilter, then dbias unless no_bias, then dX
// when one more output is given (Caffe2's ordering).
class CudnnConvTransposeGradientOp final : public CudnnConvTransposeOpBase {
 public:
  CudnnConvTransposeGradientOp(const OperatorDef& def, Workspace* workspace)
      : CudnnConvTransposeOpBase(def, workspace), no_bias_(ReadNoBias(*this)) {}

  void RunOnDevice() override {
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
    const CudnnScalars s(type_);

    // dW: dY plays the convolution's input, X its output gradient.
    const cudnnConvolutionBwdFilterAlgoPerf_t filter_algo = FilterAlgorithm(key, dy, x, dw);
    UseMath(filter_algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, y_desc_.get(), x_desc_.get(), conv_desc_.get(), w_desc_.get(), filter_algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, s.one(), y_desc_.get(), dy, x_desc_.get(), x, conv_desc_.get(), filter_algo.algo,
        scratch, ws_bytes, s.zero(), w_desc_.get(), dw));
    if (db != nullptr) {
      DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, s.one(), y_desc_.get(), dy,
                                                      s.zero(), bias_desc_.get(), db));
    }
    if (dx != nullptr) {
      // dX: the ordinary convolution of dY with the filter.
      const cudnnConvolutionFwdAlgoPerf_t data_algo = ForwardAlgorithm(key, dy, w, dx);
      UseMath(data_algo.mathType);
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
          handle, y_desc_.get(), w_desc_.get(), conv_desc_.get(), x_desc_.get(), data_algo.algo,
          &ws_bytes));
      scratch = Scratch(ws_bytes);
      DOPPIO_CUDNN_CHECK(cudnnConvolutionForward(
          handle, s.one(), y_desc_.get(), dy, w_desc_.get(), w, conv_desc_.get(), data_algo.algo,
          scratch, ws_bytes, s.zero(), x_desc_.get(), dx));
    }
  }

 private:
  cudnnConvolutionBwdFilterAlgoPerf_t FilterAlgorithm(const std::string& key, const void* dy,
                                                      const void* x, void* dw) {
    auto found = filter_algorithms_.find(key);
    if (found != filter_algorithms_.end()) return found->second;
    cudnnHandle_t handle = context_.cudnn_handle();
    int count = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(std::max(count, 1));
    int returned = 0;
    if (exhaustive_search_) {
      void* scratch = Scratch(SearchLimit());
      DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
          handle, y_desc_.get(), dy, x_desc_.get(), x, conv_desc_.get(), w_desc_.get(), dw,
          count, &returned, perfs.data(), scratch, SearchLimit()));
    } else {
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          handle, y_desc_.get(), x_desc_.get(), conv_desc_.get(), w_desc_.get(), count,
          &returned, perfs.data()));
    }
    return filter_algorithms_.emplace(key, Pick(perfs, returned, "backward-filter"))
        .first->second;
  }

  cudnnConvolutionFwdAlgoPerf_t ForwardAlgorithm(const std::string& key, const void* dy,
                                                 const void* w, void* dx) {
    auto found = forward_algorithms_.find(key);
    if (found != forward_algorithms_.end()) return found->second;
    cudnnHandle_t handle = context_.cudnn_handle();
    int count = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(count, 1));
    int returned = 0;
    if (exhaustive_search_) {
      void* scratch = Scratch(SearchLimit());
      DOPPIO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
          handle, y_desc_.get(), dy, w_desc_.get(), w, conv_desc_.get(), x_desc_.get(), dx,
          count, &returned, perfs.data(), scratch, SearchLimit()));
    } else {
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          handle, y_desc_.get(), w_desc_.get(), conv_desc_.get(), x_desc_.get(), count,
          &returned, perfs.data()));
    }
    return forward_algorithms_.emplace(key, Pick(perfs, returned, "forward")).first->second;
  }

  bool no_bias_;
  std::map<std::string, cudnnConvolutionBwdFilterAlgoPerf_t> filter_algorithms_;
  std::map<std::string, cudnnConvolutionFwdAlgoPerf_t> forward_algorithms_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(ConvTranspose, CudnnConvTransposeOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvTranspose, CUDNN, CudnnConvTransposeOp);
REGISTER_CUDA_OPERATOR(ConvTransposeGradient, CudnnConvTransposeGradientOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(ConvTransposeGradient, CUDNN, CudnnConvTransposeGradientOp);

}  // namespace doppio
