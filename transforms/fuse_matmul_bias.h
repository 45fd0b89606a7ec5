// FuseMatMulBias, for inference: BatchMatMul(X, W) + Add(., b) with W a
// constant [K, N] matrix and b a constant [N] vector -> FCTransposed(X, W, b)
// with axis -1, which computes the same product over X's last dim (any
// rank; ONNX's MatMul of a Linear layer) with the bias added in the GEMM's
// own pass instead of a broadcasting Add over the whole output. FC + Relu
// fusion can then follow.
//
// A pair is fused only when: the BatchMatMul has broadcast=1 and no
// transposes, runs on the CPU with the Add; W and b are float tensors of
// the workspace that no op of the net writes; the product is read by the
// Add alone and is no external output; nothing between the two ops touches
// the Add's output; the Add has no legacy broadcast axis.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

NetDef FuseMatMulBias(const NetDef& net, const Workspace& workspace, int* fused = nullptr);

}  // namespace transforms
}  // namespace doppio
