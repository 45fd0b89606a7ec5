// OptimizeForInference: the inference passes in the order that lets each
// feed the next: FuseConvBN (Conv + SpatialBN -> Conv), FuseMatMulBias
// (MatMul + bias Add -> FCTransposed), FuseActivation (Sigmoid * x -> Swish,
// Conv + activation / FC + Relu -> fused op), FuseConvSum (a residual
// Conv + Add (+ Relu) -> ConvFusion), conv_inference (the remaining CPU Convs
// get Caffe2 ideep's training_mode 0: forward-only, so oneDNN may pick the
// layouts of an inference primitive), ChannelsLast (the
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
  int conv_sum = 0;
  int conv_inference = 0;
  int inplace = 0;
  // "2 Conv+SpatialBN, 2 Conv+Relu, 1 FC+Relu, 0 in-place activation(s)"
  std::string Summary() const;
};

// Which passes run; benchmarks switch them one by one to measure what each
// buys. By default all but channels_last_always: channels_last switches a
// convolutional region to NHWC only where the kernels' layout advice says it
// pays on this machine (with AVX-512 it made MobileNetV2 at batch 8 1.8x
// faster; with AVX2, where it made MobileNetV2 18% slower, it switches
// nothing); channels_last_always switches every region regardless.
struct InferencePasses {
  bool conv_bn = true;
  bool matmul_bias = true;
  bool activation = true;
  bool conv_sum = true;
  bool conv_inference = true;
  bool channels_last = true;
  bool channels_last_always = false;
  bool inplace = true;
  // A comma-separated list of conv_bn, matmul_bias, activation, conv_sum,
  // conv_inference, channels_last, channels_last_always, inplace and "default" (the default
  // set); or "all" (every pass, so channels_last_always), "default", "none".
  // An unknown name throws an Error naming it.
  static InferencePasses Parse(const std::string& list);
};

// The conv_inference phase: every CPU Conv without a training_mode argument
// gets training_mode 0; `marked` receives how many.
NetDef MarkConvsForInference(const NetDef& net, int* marked = nullptr);

NetDef OptimizeForInference(const NetDef& net, Workspace* workspace,
                            const std::vector<std::string>& keep = {},
                            InferenceOptimizations* done = nullptr,
                            const InferencePasses& passes = {});

}  // namespace transforms
}  // namespace doppio
