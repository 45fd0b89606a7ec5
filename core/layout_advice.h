// Which activation layout a CPU kernel runs fastest from, in the kernel's own
// words. oneDNN picks its convolutions' layouts per ISA and shape (NHWC for
// 3x3 and depthwise convolutions with AVX-512, its 8-channel blocks with
// AVX2), so a graph pass that may not depend on the kernels
// (transforms/channels_last) asks here whether running a region in NHWC
// saves reorders on this machine.
//
// The kernels register an advisor per op type at static initialization;
// asking is thread-safe after that. No advisor, or one that cannot decide,
// answers kNoPreference.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

enum class ActivationLayout {
  kNoPreference,
  kNchw,   // reads the NCHW tensor as it is
  kNhwc,   // reads an NHWC tensor as it is
  kOther,  // reorders either into a layout of its own (blocked channels)
};

const char* ActivationLayoutName(ActivationLayout layout);

// The advice for `op` (as the def says, e.g. order NCHW) with inputs of
// `input_shapes`: the layout its data input 0 would be read fastest in.
using LayoutAdvisor = std::function<ActivationLayout(const OperatorDef& op,
                                                     const std::vector<TensorShape>& input_shapes)>;

// Returns true so that a registration can initialize a static constant.
bool RegisterLayoutAdvisor(const std::string& op_type, LayoutAdvisor advisor);

ActivationLayout AdviseLayout(const OperatorDef& op, const std::vector<TensorShape>& input_shapes);

}  // namespace doppio
