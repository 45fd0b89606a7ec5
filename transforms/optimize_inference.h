// OptimizeForInference: the inference passes in the order that lets each
// feed the next: FuseConvBN (Conv + SpatialBN -> Conv), FuseMatMulBias
// (MatMul + bias Add -> FCTransposed), FuseActivation (Sigmoid * x -> Swish,
// Conv + activation / FC + Relu -> fused op), ChannelsLast (the
// convolutional regions in NHWC), InplaceActivation (what activations remain
// reuse their input's storage). FC needs no pass to reach oneDNN: float32
// FC runs there always (operators/fc_op_dnnl.h).
//
// Run it after the init net: FuseConvBN reads the weights from the
// workspace and writes the folded ones there; FuseMatMulBias reads which
// blobs are constant matrices and vectors. Blobs named in `keep` (e.g.
// what a caller will fetch) are treated as external outputs, so no pass
// removes or overwrites them.
#pragma once

#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

struct InferenceOptimizations {
  int conv_bn = 0;
  int matmul_bias = 0;
  int channels_last = 0;
  int swish = 0;
  int conv_relu = 0;
  int conv_activation = 0;
  int fc_relu = 0;
  int inplace = 0;
  // "2 Conv+SpatialBN, 2 Conv+Relu, 1 FC+Relu, 0 in-place activation(s)"
  std::string Summary() const;
};

// Which passes run; benchmarks switch them one by one to measure what each
// buys. By default all but channels_last, which is opt-in: on AVX2 it made
// ResNet-50 at batch 8 15% faster but MobileNetV2 18% slower (oneDNN's NHWC
// depthwise kernels), so it waits for a cost model that picks per region.
struct InferencePasses {
  bool conv_bn = true;
  bool matmul_bias = true;
  bool activation = true;
  bool channels_last = false;
  bool inplace = true;
  // A comma-separated list of conv_bn, matmul_bias, activation,
  // channels_last, inplace and "default" (the default set); or "all",
  // "default", "none". An unknown name throws an Error naming it.
  static InferencePasses Parse(const std::string& list);
};

NetDef OptimizeForInference(const NetDef& net, Workspace* workspace,
                            const std::vector<std::string>& keep = {},
                            InferenceOptimizations* done = nullptr,
                            const InferencePasses& passes = {});

}  // namespace transforms
}  // namespace doppio
