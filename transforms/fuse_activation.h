// FuseActivation: Conv + Relu -> ConvFusion (fusion_type 1, Caffe2's ideep
// name and argument) and FC + Relu -> FC with fusion_type 1, for inference.
// The Relu then runs inside the producing kernel (a oneDNN post-op for
// Conv, the bias pass for FC), so the intermediate is written once and
// never re-read.
//
// A pair is fused only when the producer's output is read by the Relu alone
// and not handed out by the net (an in-place Relu, a -> a, is fine), both
// run on the CPU, nothing between them touches the Relu's output, and:
//   Conv: one group (as Caffe2's shouldFuseConv), one output;
//   FC / FCTransposed: no fusion_type already.
// The fused ops have no gradient: fuse predict nets, not training nets.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {
namespace transforms {

struct ActivationFusions {
  int conv_relu = 0;
  int fc_relu = 0;
};

NetDef FuseActivation(const NetDef& net, ActivationFusions* fused = nullptr);

}  // namespace transforms
}  // namespace doppio
