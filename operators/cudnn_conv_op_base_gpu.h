// The host-side machinery that the cuDNN Conv and ConvTranspose ops (and
// their gradients) share: Caffe2's cuDNN arguments, the descriptors of the
// current shape, per-shape algorithm caches and the scratch workspace.
//
// A transposed convolution is cuDNN's convolution run backwards, so the
// passes below name their tensors by role (`in`, `out`, `dout`, ...) and
// take the descriptors as parameters: each op decides which of its X and Y
// plays cuDNN's input and which its output.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/cuda/cuda_fallback_op.h"
#include "core/operator.h"
#include "operators/conv_op_gpu.h"
#include "operators/cudnn_descriptors_gpu.h"

namespace doppio {

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
    DOPPIO_ENFORCE(ws_nbytes_limit_ >= 0, "ws_nbytes_limit is ", ws_nbytes_limit_,
                   "; it must be >= 0");
  }

  // The cuDNN path, or the op's CPU kernel through the CUDA fallback where
  // cuDNN cannot take the problem (NotImplementedError from the plan or the
  // algorithm search).
  void RunOnDevice() final {
    try {
      RunCudnn();
    } catch (const NotImplementedError&) {
      cpu_fallback_.Run(*this, context_);
    }
  }

 protected:
  virtual void RunCudnn() = 0;

  // `plan` is a CudnnConvPlan or a CudnnConvTransposePlan: both carry
  // cuDNN's x/y/w dims, pads, strides, dilations, group and out_channels.
  template <typename Plan>
  void SetDescriptors(const Plan& plan, StorageOrder order, DataType dtype) {
    type_ = CudnnDataTypeOf(dtype, DisplayName().c_str());
    const cudnnTensorFormat_t format =
        order == StorageOrder::kNCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
    x_desc_.SetNd(format, type_, plan.cudnn_x_dims);
    y_desc_.SetNd(format, type_, plan.cudnn_y_dims);
    std::vector<int64_t> bias_dims(plan.cudnn_y_dims.size(), 1);
    bias_dims[1] = plan.out_channels;
    bias_desc_.SetNd(format, type_, bias_dims);
    w_desc_.SetNd(format, type_, plan.cudnn_w_dims);
    conv_desc_.SetNd(plan.pads, plan.strides, plan.dilations, type_,
                     static_cast<int>(plan.group), DefaultMath());
  }

  // out = conv(in, w), with the algorithm cached under `key`.
  void ConvolutionForward(const std::string& key, const CudnnTensorDescriptor& in_desc,
                          const void* in, const void* w, const CudnnTensorDescriptor& out_desc,
                          void* out) {
    cudnnHandle_t handle = context_.cudnn_handle();
    auto found = forward_algorithms_.find(key);
    if (found == forward_algorithms_.end()) {
      int count = 0;
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(std::max(count, 1));
      int returned = 0;
      if (exhaustive_search_) {
        void* scratch = Scratch(SearchLimit());
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            handle, in_desc.get(), in, w_desc_.get(), w, conv_desc_.get(), out_desc.get(), out,
            count, &returned, perfs.data(), scratch, SearchLimit()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            handle, in_desc.get(), w_desc_.get(), conv_desc_.get(), out_desc.get(), count,
            &returned, perfs.data()));
      }
      found = forward_algorithms_.emplace(key, Pick(perfs, returned, "forward")).first;
    }
    const cudnnConvolutionFwdAlgoPerf_t& algo = found->second;
    UseMath(algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        handle, in_desc.get(), w_desc_.get(), conv_desc_.get(), out_desc.get(), algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionForward(handle, s.one(), in_desc.get(), in,
                                               w_desc_.get(), w, conv_desc_.get(), algo.algo,
                                               scratch, ws_bytes, s.zero(), out_desc.get(), out));
  }

  // din = the gradient of conv(in, w) with respect to `in`, given `dout`.
  void ConvolutionBackwardData(const std::string& key, const void* w,
                               const CudnnTensorDescriptor& dout_desc, const void* dout,
                               const CudnnTensorDescriptor& din_desc, void* din) {
    cudnnHandle_t handle = context_.cudnn_handle();
    auto found = data_algorithms_.find(key);
    if (found == data_algorithms_.end()) {
      int count = 0;
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(std::max(count, 1));
      int returned = 0;
      if (exhaustive_search_) {
        void* scratch = Scratch(SearchLimit());
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            handle, w_desc_.get(), w, dout_desc.get(), dout, conv_desc_.get(), din_desc.get(),
            din, count, &returned, perfs.data(), scratch, SearchLimit()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            handle, w_desc_.get(), dout_desc.get(), conv_desc_.get(), din_desc.get(), count,
            &returned, perfs.data()));
      }
      found = data_algorithms_.emplace(key, Pick(perfs, returned, "backward-data")).first;
    }
    const cudnnConvolutionBwdDataAlgoPerf_t& algo = found->second;
    UseMath(algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, w_desc_.get(), dout_desc.get(), conv_desc_.get(), din_desc.get(), algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, s.one(), w_desc_.get(), w, dout_desc.get(), dout, conv_desc_.get(), algo.algo,
        scratch, ws_bytes, s.zero(), din_desc.get(), din));
  }

  // dw = the gradient of conv(in, w) with respect to w, given `dout`.
  void ConvolutionBackwardFilter(const std::string& key, const CudnnTensorDescriptor& in_desc,
                                 const void* in, const CudnnTensorDescriptor& dout_desc,
                                 const void* dout, void* dw) {
    cudnnHandle_t handle = context_.cudnn_handle();
    auto found = filter_algorithms_.find(key);
    if (found == filter_algorithms_.end()) {
      int count = 0;
      DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(std::max(count, 1));
      int returned = 0;
      if (exhaustive_search_) {
        void* scratch = Scratch(SearchLimit());
        DOPPIO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            handle, in_desc.get(), in, dout_desc.get(), dout, conv_desc_.get(), w_desc_.get(),
            dw, count, &returned, perfs.data(), scratch, SearchLimit()));
      } else {
        DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            handle, in_desc.get(), dout_desc.get(), conv_desc_.get(), w_desc_.get(), count,
            &returned, perfs.data()));
      }
      found = filter_algorithms_.emplace(key, Pick(perfs, returned, "backward-filter")).first;
    }
    const cudnnConvolutionBwdFilterAlgoPerf_t& algo = found->second;
    UseMath(algo.mathType);
    size_t ws_bytes = 0;
    DOPPIO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle, in_desc.get(), dout_desc.get(), conv_desc_.get(), w_desc_.get(), algo.algo,
        &ws_bytes));
    void* scratch = Scratch(ws_bytes);
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, s.one(), in_desc.get(), in, dout_desc.get(), dout, conv_desc_.get(), algo.algo,
        scratch, ws_bytes, s.zero(), w_desc_.get(), dw));
  }

  // y += bias, broadcast over every axis but the channels (the op's Y).
  void AddBias(const void* bias, void* y) {
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnAddTensor(context_.cudnn_handle(), s.one(), bias_desc_.get(), bias,
                                      s.one(), y_desc_.get(), y));
  }

  // db = dY summed over every axis but the channels.
  void BiasGradient(const void* dy, void* db) {
    const CudnnScalars s(type_);
    DOPPIO_CUDNN_CHECK(cudnnConvolutionBackwardBias(context_.cudnn_handle(), s.one(),
                                                    y_desc_.get(), dy, s.zero(),
                                                    bias_desc_.get(), db));
  }

  // Gradients of an empty batch are zero; null tensors are skipped.
  void ZeroOnDevice(std::initializer_list<Tensor*> tensors) {
    for (Tensor* t : tensors) {
      if (t != nullptr && t->nbytes() > 0) {
        DOPPIO_CUDA_CHECK(
            cudaMemsetAsync(t->raw_mutable_data(), 0, t->nbytes(), context_.cuda_stream()));
      }
    }
  }

  ConvPoolArgs args_;
  int64_t ws_nbytes_limit_;
  bool exhaustive_search_;
  bool deterministic_;
  bool enable_tensor_core_;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  // The op's X and Y, whichever of them cuDNN sees as input or output.
  CudnnTensorDescriptor x_desc_, y_desc_, bias_desc_;
  CudnnFilterDescriptor w_desc_;
  CudnnConvolutionDescriptor conv_desc_;

 private:
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
    return PickCudnnAlgorithm(valid, SearchLimit(), deterministic_, enable_tensor_core_,
                              DisplayName(), pass);
  }

  size_t SearchLimit() const { return static_cast<size_t>(ws_nbytes_limit_); }

  // Scratch memory from the CUDA caching allocator, on the op's stream.
  void* Scratch(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    workspace_.Resize({static_cast<int64_t>(nbytes)});
    return workspace_.raw_mutable_data(DataType::kUint8);
  }

  // Per shape key; each op fills only the passes it runs.
  std::map<std::string, cudnnConvolutionFwdAlgoPerf_t> forward_algorithms_;
  std::map<std::string, cudnnConvolutionBwdDataAlgoPerf_t> data_algorithms_;
  std::map<std::string, cudnnConvolutionBwdFilterAlgoPerf_t> filter_algorithms_;
  Tensor workspace_{context_.device()};
  CudaCpuFallback cpu_fallback_;
};

}  // namespace doppio
