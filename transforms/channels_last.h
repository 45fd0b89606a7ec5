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
// Where it pays (ChannelsLastOptions::always false, the default inference
// passes): oneDNN picks its own layout per ISA and shape, so each connected
// part of the region is kept only when the convolutions the kernels say read
// NHWC as it is (core/layout_advice.h) carry more activation elements, input
// plus output, than those that read NCHW as it is plus the values switched
// at the part's borders. With AVX-512 3x3 and depthwise convolutions read
// NHWC; with AVX2 oneDNN reorders both orders into 8-channel blocks, so
// nothing pays and the net stays NCHW.
//
// Emit renames region values to "<blob>_nhwc" and writes the NHWC filters
// ("<filter>_nhwc", [M, kh, kw, C/g]) into the workspace.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/layout_advice.h"
#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

namespace transforms {

struct ChannelsLastOptions {
  // Every region (the opt-in pass channels_last_always), or only the parts
  // that pay.
  bool always = true;
  // The kernels' advice; tests give their own to be machine-independent.
  LayoutAdvisor advise = AdviseLayout;
};

// One connected part of the region, in activation elements: what NHWC saves
// (convolutions reading NHWC as it is) and costs (convolutions reading NCHW
// as it is, order switches at its borders).
struct ChannelsLastPart {
  std::set<int> ops;
  int64_t saved = 0;
  int64_t cost = 0;
  bool pays() const { return saved > cost; }
};

struct ChannelsLastPlan {
  std::set<int> region;  // op indices run in NHWC
  std::vector<ChannelsLastPart> parts;  // when costed: every part, kept or not
  std::string ToString(const NetDef& net) const;
};

ChannelsLastPlan PlanChannelsLast(const NetDef& net, const Workspace& workspace,
                                  const ChannelsLastOptions& options = {});

// The net with the plan applied; `switched` (when non-null) receives the
// number of region ops.
NetDef ChannelsLast(const NetDef& net, Workspace* workspace, int* switched = nullptr,
                    const ChannelsLastOptions& options = {});

}  // namespace transforms
}  // namespace doppio
