// FuseConvSum, for inference: a residual block's Conv -> Add(., S) (-> Relu)
// becomes one ConvFusion with fusion_type 2 (Conv + sum) or 3 (Conv + sum +
// Relu), Caffe2's ideep fusions: oneDNN adds S (and applies Relu) while the
// convolution writes its output, so the sum and the activation cost no pass
// of their own, and the convolution runs as an inference primitive, whose
// layout choice channels_last can follow.
//
// A pair is fused only when: both ops run on the CPU; the Conv (2-D or any
// rank, any group) has its output read by the Add alone, and it is no
// external output; the Add (or a two-input Sum) has no legacy broadcast
// axis and both operands have the same inferred shape and type; no op
// between the two writes the Conv's inputs (the fused op runs where the Add
// was, when S is ready). A Relu reading the sum alone joins as type 3.
// Where both operands are Conv outputs, the later Conv is fused.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

NetDef FuseConvSum(const NetDef& net, const Workspace& workspace, int* fused = nullptr);

}  // namespace transforms
}  // namespace doppio
