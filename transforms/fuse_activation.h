// FuseActivation, for inference: first Sigmoid(x) * x -> Swish(x) (SiLU as
// ONNX graphs spell it) and HardSigmoid(x; 1/6, 1/2) * x -> HardSwish(x)
// (torch's hardswish); then Conv + activation -> ConvFusion (fusion_type 1,
// Caffe2's ideep name and argument; an activation other than Relu is named
// by the argument `activation`, its arguments prefixed "activation_") and
// FC + Relu -> FC with fusion_type 1. The activation then runs inside the
// producing kernel (a oneDNN post-op for Conv, the bias pass for FC), so the
// intermediate is written once and never re-read. Conv fuses Relu,
// LeakyRelu, Clip, Sigmoid, Tanh, Elu, Swish and HardSwish; FC fuses Relu.
//
// A pair is fused only when the producer's output is read by the Relu alone
// and not handed out by the net (an in-place Relu, a -> a, is fine), both
// run on the CPU, nothing between them touches the Relu's output, and:
//   Conv: one output, any group count (Caffe2's shouldFuseConv wanted one
//         group, an ideep limit that oneDNN's kernels no longer have);
//   FC / FCTransposed: no fusion_type already.
// The fused ops have no gradient: fuse predict nets, not training nets.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {
namespace transforms {

struct ActivationFusions {
  int swish = 0;            // Sigmoid * x -> Swish, HardSigmoid * x -> HardSwish
  int conv_relu = 0;        // Conv + Relu
  int conv_activation = 0;  // Conv + another activation
  int fc_relu = 0;
};

NetDef FuseActivation(const NetDef& net, ActivationFusions* fused = nullptr);

}  // namespace transforms
}  // namespace doppio
