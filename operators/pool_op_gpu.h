// The host-side plan of a cuDNN 2-D pooling, resolved from Caffe2's pooling
// arguments and the input shape before any CUDA call, so argument and shape
// errors surface (and are testable) without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "operators/conv_pool_op_base.h"

namespace doppio {

struct CudnnPoolPlan {
  ConvPoolGeometry geometry;  // 2-D, symmetric pads, no dilation
  std::vector<int64_t> output_dims;
};

// Checks what the CPU pooling checks (pads smaller than the kernel) and
// cuDNN's limits (4-D input, equal begin/end pads, no dilation: those throw
// NotImplementedError, and the op runs the CPU kernel instead). Errors name
// `args.op_type()` and `x_name`.
CudnnPoolPlan ResolveCudnnPool(const ConvPoolArgs& args, const std::string& x_name,
                               const std::vector<int64_t>& x_dims);

}  // namespace doppio
