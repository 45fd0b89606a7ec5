// The host-side plan of a cuDNN convolution (1-D to 3-D), resolved from Caffe2's
// Conv arguments and the input/filter shapes before any CUDA call (so shape
// and argument errors surface, and are testable, without a GPU), and the
// algorithm choice shared by the forward and both backward passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cudnn.h>

#include "core/enforce.h"
#include "operators/conv_pool_op_base.h"

namespace doppio {

// Caffe2's kCONV_CUDNN_WORKSPACE_LIMIT_BYTES: the default `ws_nbytes_limit`.
constexpr int64_t kDefaultCudnnWorkspaceLimitBytes = 64 * 1024 * 1024;

struct CudnnConvPlan {
  ConvPoolGeometry geometry;  // of X; symmetric pads
  int64_t out_channels = 0;   // M: filter dim 0
  int64_t group = 1;
  int64_t in_per_group = 0;   // C / group: the filter's channel dim
  std::vector<int64_t> output_dims;  // Y's full dims, in X's order
  // What cuDNN is given: dims in N, C, spatial... (K, C, spatial... for the
  // filter) order whatever the memory order, with a 1-D problem lifted to
  // 2-D (a unit first spatial axis), since cuDNN wants 2 or 3 spatial axes.
  std::vector<int64_t> cudnn_x_dims, cudnn_w_dims, cudnn_y_dims;
  std::vector<int64_t> pads, strides, dilations;  // per cuDNN spatial axis
};

// Validates X (3-D to 5-D: 1-D to 3-D images, NCHW or NHWC per `args`), the
// filter and the arguments the way the CPU Conv does, plus cuDNN's own limit
// (equal begin and end pads). Errors name `args.op_type()` and the blobs.
CudnnConvPlan ResolveCudnnConv(const ConvPoolArgs& args, const std::string& x_name,
                               const std::vector<int64_t>& x_dims, const std::string& w_name,
                               const std::vector<int64_t>& w_dims);

// The first usable algorithm of a cudnnGet*_v7 / cudnnFind* result list
// (best first): it succeeded, needs at most `workspace_limit` bytes, is
// deterministic when `deterministic`, and does not use tensor-op math on
// float32 unless `allow_tensor_op_math` (TF32 would change results). Throws,
// naming `op` and `pass`, when none qualifies.
template <typename Perf>
Perf PickCudnnAlgorithm(const std::vector<Perf>& perfs, size_t workspace_limit,
                        bool deterministic, bool allow_tensor_op_math, const std::string& op,
                        const char* pass) {
  for (const Perf& perf : perfs) {
    if (perf.status != CUDNN_STATUS_SUCCESS) continue;
    if (perf.memory > workspace_limit) continue;
    if (deterministic && perf.determinism != CUDNN_DETERMINISTIC) continue;
    if (!allow_tensor_op_math && (perf.mathType == CUDNN_TENSOR_OP_MATH ||
                                  perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
      continue;
    }
    return perf;
  }
  DOPPIO_NOT_IMPLEMENTED(
      "op ", op, ": cuDNN offers no ", pass, " algorithm within ws_nbytes_limit=", workspace_limit,
      deterministic ? " that is deterministic" : "",
      allow_tensor_op_math ? "" : " without tensor-op math", " (", perfs.size(),
      " candidates); raise ws_nbytes_limit or drop deterministic");
}

}  // namespace doppio
