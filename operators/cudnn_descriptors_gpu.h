// RAII owners of cuDNN's legacy descriptors (tensor, filter, convolution,
// pooling, activation) and the helpers that fill them from Doppio's shapes.
//
// Creating and setting a descriptor needs no cuDNN handle and no device, so
// everything here is usable (and tested) on machines without a GPU; only the
// cudnn*Forward/Backward calls that consume descriptors need one. Failures
// throw doppio::Error naming the cuDNN call and status.
//
// Thread-safety: a descriptor belongs to one op; distinct descriptors may be
// used from different threads.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "core/operator.h"
#include "core/types.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

// cuDNN's data type for a Doppio dtype; throws for types cuDNN does not take
// (`what` names the op and blob in the message).
cudnnDataType_t CudnnDataTypeOf(DataType dtype, const char* what);

// A 4-D tensor descriptor. Also used for vectors and matrices (as N x C x 1
// x 1), which is how cuDNN wants per-channel parameters and softmax rows.
class CudnnTensorDescriptor {
 public:
  CudnnTensorDescriptor();
  ~CudnnTensorDescriptor();
  CudnnTensorDescriptor(const CudnnTensorDescriptor&) = delete;
  CudnnTensorDescriptor& operator=(const CudnnTensorDescriptor&) = delete;

  void Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t n, int64_t c,
             int64_t h, int64_t w);
  // 4 or 5 dims in N, C, spatial... order whatever the memory `format`.
  void SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
             const std::vector<int64_t>& dims);
  cudnnTensorDescriptor_t get() const { return descriptor_; }

 private:
  cudnnTensorDescriptor_t descriptor_ = nullptr;
};

class CudnnFilterDescriptor {
 public:
  CudnnFilterDescriptor();
  ~CudnnFilterDescriptor();
  CudnnFilterDescriptor(const CudnnFilterDescriptor&) = delete;
  CudnnFilterDescriptor& operator=(const CudnnFilterDescriptor&) = delete;

  // k output channels, c input channels per group, an h x w kernel.
  void Set4d(cudnnTensorFormat_t format, cudnnDataType_t type, int64_t k, int64_t c,
             int64_t h, int64_t w);
  // 4 or 5 dims in K, C, spatial... order whatever the memory `format`.
  void SetNd(cudnnTensorFormat_t format, cudnnDataType_t type,
             const std::vector<int64_t>& dims);
  cudnnFilterDescriptor_t get() const { return descriptor_; }

 private:
  cudnnFilterDescriptor_t descriptor_ = nullptr;
};

class CudnnConvolutionDescriptor {
 public:
  CudnnConvolutionDescriptor();
  ~CudnnConvolutionDescriptor();
  CudnnConvolutionDescriptor(const CudnnConvolutionDescriptor&) = delete;
  CudnnConvolutionDescriptor& operator=(const CudnnConvolutionDescriptor&) = delete;

  // Cross-correlation (what Caffe2's Conv computes), with `compute_type`
  // accumulation, `group` groups and `math` (CUDNN_FMA_MATH keeps float32
  // exact; CUDNN_DEFAULT_MATH lets cuDNN use TF32 tensor cores).
  void Set2d(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w,
             int64_t dilation_h, int64_t dilation_w, cudnnDataType_t compute_type, int group,
             cudnnMathType_t math);
  // One pad / stride / dilation per spatial axis (2 or 3 axes).
  void SetNd(const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
             const std::vector<int64_t>& dilations, cudnnDataType_t compute_type, int group,
             cudnnMathType_t math);
  cudnnConvolutionDescriptor_t get() const { return descriptor_; }

 private:
  cudnnConvolutionDescriptor_t descriptor_ = nullptr;
};

class CudnnPoolingDescriptor {
 public:
  CudnnPoolingDescriptor();
  ~CudnnPoolingDescriptor();
  CudnnPoolingDescriptor(const CudnnPoolingDescriptor&) = delete;
  CudnnPoolingDescriptor& operator=(const CudnnPoolingDescriptor&) = delete;

  void Set2d(cudnnPoolingMode_t mode, int64_t kernel_h, int64_t kernel_w, int64_t pad_h,
             int64_t pad_w, int64_t stride_h, int64_t stride_w);
  cudnnPoolingDescriptor_t get() const { return descriptor_; }

 private:
  cudnnPoolingDescriptor_t descriptor_ = nullptr;
};

class CudnnActivationDescriptor {
 public:
  CudnnActivationDescriptor();
  ~CudnnActivationDescriptor();
  CudnnActivationDescriptor(const CudnnActivationDescriptor&) = delete;
  CudnnActivationDescriptor& operator=(const CudnnActivationDescriptor&) = delete;

  void Set(cudnnActivationMode_t mode, double coef);
  cudnnActivationDescriptor_t get() const { return descriptor_; }

 private:
  cudnnActivationDescriptor_t descriptor_ = nullptr;
};

// Scaling factors of cuDNN's alpha/beta arguments: float for half and float
// data, double for double data (cuDNN reads them through void*).
struct CudnnScalars {
  explicit CudnnScalars(cudnnDataType_t type);
  const void* one() const { return is_double ? static_cast<const void*>(&one_d)
                                             : static_cast<const void*>(&one_f); }
  const void* zero() const { return is_double ? static_cast<const void*>(&zero_d)
                                              : static_cast<const void*>(&zero_f); }
  bool is_double = false;
  float one_f = 1.f, zero_f = 0.f;
  double one_d = 1.0, zero_d = 0.0;
};

}  // namespace doppio
