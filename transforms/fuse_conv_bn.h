// FuseConvBN: folds an inference SpatialBN into the Conv before it
// (Caffe2's caffe2/opt/fusion.cc fuseConvBN, and
// caffe2.python.transformations.fuseConvBN).
//
//   Y = SpatialBN(Conv(X, W, b), scale, shift, mean, var)   (is_test = 1)
//     = Conv(X, W', b'),  W'[m] = W[m] * k[m],  b'[m] = (b[m] - mean[m]) * k[m] + shift[m],
//       k[m] = scale[m] / sqrt(var[m] + epsilon)
//
// The folded weights are new blobs written into `workspace` (named after
// the filter and bias, made unique), so a filter shared with other ops keeps
// its value. A pair is fused only when it is safe; otherwise it is left as
// it is:
//   - the Conv's output is read by the SpatialBN alone and not an external
//     output, and nothing between the two ops touches the SpatialBN's output;
//   - SpatialBN is in test mode (is_test != 0) with one output and the same
//     order (NCHW / NHWC) as the Conv; both run on the CPU;
//   - the filter, the bias and the four BN inputs are float tensors in the
//     workspace that no op of the net writes, with one value per channel.
// Groups and dilations do not matter: the fold is per output channel.
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

// Returns the net with every safe Conv + SpatialBN pair folded; `fused`
// (when non-null) receives how many.
NetDef FuseConvBN(const NetDef& net, Workspace* workspace, int* fused = nullptr);

}  // namespace transforms
}  // namespace doppio
