// ChannelsLast, for inference: runs the convolutional parts of an NCHW net
// in NHWC. oneDNN's convolutions read and write NHWC directly, where NCHW
// costs a reorder into its blocked layout and one back around every Conv
// (10-50% of a Conv's time at batch 8 on AVX2); a region of NHWC ops pays
// one order switch where it starts and one where a value leaves it.
//
// The plan, a value (PlanChannelsLast), picks the region: every CPU Conv /
// ConvFusion of order NCHW whose filter is a constant 4-D float tensor of the
// workspace, then, in net order, every op all of whose data inputs are
// region values and which keeps its meaning in NHWC:
//   order-aware: MaxPool, AveragePool, SpatialBN (is_test), LRN -> order NHWC;
//                Concat along the channels -> axis 3;
//   pointwise:   the activations, Copy, Scale, Dropout (is_test);
//   Add, Sub, Mul, Div, Sum with all operands region values (permuting every
//                operand alike keeps numpy broadcasting) and no legacy axis.
// Values stay NCHW for everything outside: NCHW2NHWC before a region op
// reading an outside value, NHWC2NCHW after a region op whose value an
// outside op or the net's caller reads. A blob written both inside and
// outside the region (or read outside between two region writes) takes its
// writers out of the region.
//
// Emit renames region values to "<blob>_nhwc" and writes the NHWC filters
// ("<filter>_nhwc", [M, kh, kw, C/g]) into the workspace.
#pragma once

#include <set>
#include <string>

#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

struct ChannelsLastPlan {
  std::set<int> region;  // op indices run in NHWC
  std::string ToString(const NetDef& net) const;
};

ChannelsLastPlan PlanChannelsLast(const NetDef& net, const Workspace& workspace);

// The net with the plan applied; `switched` (when non-null) receives the
// number of region ops.
NetDef ChannelsLast(const NetDef& net, Workspace* workspace, int* switched = nullptr);

}  // namespace transforms
}  // namespace doppio
