#include "operators/cudnn_descriptors_gpu.h"

#include <limits>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/enforce.h"

namespace doppio {

namespace {

// cuDNN's legacy descriptors take int; a larger size would silently wrap.
int ToCudnnInt(int64_t value, const char* what) {
  DOPPIO_ENFORCE(value >= 0 && value <= std::numeric_limits<int>::max(), "cuDNN ", what,
                 " ", value, " does not fit cuDNN's int descriptors");
  return static_cast<int>(value);
}

std::vector<int> ToCudnnInts(const std::vector<int64_t>& values, const char* what) {
  std::vector<int> result;
  result.reserve(values.size());
  for (int64_t v : values) result.push_back(ToCudnnInt(v, what));
  return result;
}

}  // namespace

cudnnDataType_t CudnnDataTypeOf(DataType dtype, const char* what) {
  switch (dtype) {
    case DataType::kFloat:
      return CUDNN_DATA_FLOAT;
    case DataType::kDouble:
      return CUDNN_DATA_DOUBLE;
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    default:
      DOPPIO_THROW(what, ": cuDNN takes float16, float32 or float64, not ",
                   DataTypeName(dtype));
  }
}

CudnnTensorDescriptor::CudnnTensorDescriptor() {
  DOPPIO_CUDNN_CHECK(cudnnCreateTensorDescriptor(&descriptor_));
}
CudnnTensorDescriptor::~CudnnTensorDescriptor() { cudnnDestroyTensorDescriptor(descriptor_); }

void CudnnTensorDescriptor::Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n,
                                  int64_t c, int64_t h, int64_t w) {
  DOPPIO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(
      descriptor_, format, type, ToCudnnInt(n, "tensor dim N"), ToCudnnInt(c, "tensor dim C"),
      ToCudnnInt(h, "tensor dim H"), ToCudnnInt(w, "tensor dim W")));
}

void CudnnTensorDescriptor::SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
                                  const std::vector<int64_t>& dims) {
  const std::vector<int> sizes = ToCudnnInts(dims, "tensor dim");
  DOPPIO_CUDNN_CHECK(cudnnSetTensorNdDescriptorEx(descriptor_, format, type,
                                                  static_cast<int>(sizes.size()), sizes.data()));
}

CudnnFilterDescriptor::CudnnFilterDescriptor() {
  DOPPIO_CUDNN_CHECK(cudnnCreateFilterDescriptor(&descriptor_));
}
CudnnFilterDescriptor::~CudnnFilterDescriptor() { cudnnDestroyFilterDescriptor(descriptor_); }

void CudnnFilterDescriptor::Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t k,
                                  int64_t c, int64_t h, int64_t w) {
  DOPPIO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
      descriptor_, type, format, ToCudnnInt(k, "filter dim K"), ToCudnnInt(c, "filter dim C"),
      ToCudnnInt(h, "filter dim H"), ToCudnnInt(w, "filter dim W")));
}

void CudnnFilterDescriptor::SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
                                  const std::vector<int64_t>& dims) {
  const std::vector<int> sizes = ToCudnnInts(dims, "filter dim");
  DOPPIO_CUDNN_CHECK(cudnnSetFilterNdDescriptor(descriptor_, type, format,
                                                static_cast<int>(sizes.size()), sizes.data()));
}

CudnnConvolutionDescriptor::CudnnConvolutionDescriptor() {
  DOPPIO_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&descriptor_));
}
CudnnConvolutionDescriptor::~CudnnConvolutionDescriptor() {
  cudnnDestroyConvolutionDescriptor(descriptor_);
}

void CudnnConvolutionDescriptor::Set2d(int64_t pad_h, int64_t pad_w, int64_t stride_h,
                                       int64_t stride_w, int64_t dilation_h,
                                       int64_t dilation_w, cudnnDataType_t compute_type,
                                       int group, cudnnMathType_t math) {
  DOPPIO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      descriptor_, ToCudnnInt(pad_h, "pad"), ToCudnnInt(pad_w, "pad"),
      ToCudnnInt(stride_h, "stride"), ToCudnnInt(stride_w, "stride"),
      ToCudnnInt(dilation_h, "dilation"), ToCudnnInt(dilation_w, "dilation"),
      CUDNN_CROSS_CORRELATION, compute_type));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionGroupCount(descriptor_, group));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(descriptor_, math));
}

void CudnnConvolutionDescriptor::SetNd(const std::vector<int64_t>& pads,
                                       const std::vector<int64_t>& strides,
                                       const std::vector<int64_t>& dilations,
                                       cudnnDataType_t compute_type, int group,
                                       cudnnMathType_t math) {
  const std::vector<int> pad = ToCudnnInts(pads, "pad");
  const std::vector<int> stride = ToCudnnInts(strides, "stride");
  const std::vector<int> dilation = ToCudnnInts(dilations, "dilation");
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(
      descriptor_, static_cast<int>(pad.size()), pad.data(), stride.data(), dilation.data(),
      CUDNN_CROSS_CORRELATION, compute_type));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionGroupCount(descriptor_, group));
  DOPPIO_CUDNN_CHECK(cudnnSetConvolutionMathType(descriptor_, math));
}

CudnnPoolingDescriptor::CudnnPoolingDescriptor() {
  DOPPIO_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&descriptor_));
}
CudnnPoolingDescriptor::~CudnnPoolingDescriptor() { cudnnDestroyPoolingDescriptor(descriptor_); }

void CudnnPoolingDescriptor::Set2d(cudnnPoolingMode_t mode, int64_t kernel_h, int64_t kernel_w,
                                   int64_t pad_h, int64_t pad_w, int64_t stride_h,
                                   int64_t stride_w) {
  // NaNs propagate as they do in the CPU kernels' max.
  DOPPIO_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
      descriptor_, mode, CUDNN_PROPAGATE_NAN, ToCudnnInt(kernel_h, "kernel"),
      ToCudnnInt(kernel_w, "kernel"), ToCudnnInt(pad_h, "pad"), ToCudnnInt(pad_w, "pad"),
      ToCudnnInt(stride_h, "stride"), ToCudnnInt(stride_w, "stride")));
}

CudnnActivationDescriptor::CudnnActivationDescriptor() {
  DOPPIO_CUDNN_CHECK(cudnnCreateActivationDescriptor(&descriptor_));
}
CudnnActivationDescriptor::~CudnnActivationDescriptor() {
  cudnnDestroyActivationDescriptor(descriptor_);
}

void CudnnActivationDescriptor::Set(cudnnActivationMode_t mode, double coef) {
  DOPPIO_CUDNN_CHECK(cudnnSetActivationDescriptor(descriptor_, mode, CUDNN_PROPAGATE_NAN, coef));
}

CudnnScalars::CudnnScalars(cudnnDataType_t type) : is_double(type == CUDNN_DATA_DOUBLE) {}

}  // namespace doppio
