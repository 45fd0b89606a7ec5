// InplaceActivation: an elementwise activation Y = f(X) whose input X dies
// there is rewritten to X = f(X), and later readers of Y read X, so the
// activation reuses X's storage instead of filling a second buffer.
//
// Legal only when nothing can tell: X is produced by the net, read by no op
// after the activation and neither an external input nor output; Y is
// written by the activation alone and is not an external input or output.
// Activations: Relu, LeakyRelu, Sigmoid, Tanh, Elu, Softplus (each allows
// in-place in its schema).
#pragma once

#include "proto/doppio.pb.h"

namespace doppio {
namespace transforms {

NetDef InplaceActivation(const NetDef& net, int* rewritten = nullptr);

}  // namespace transforms
}  // namespace doppio
