// Depthwise (group = channels) 2-D NCHW filter and bias gradients of our
// own, for the shapes where oneDNN has no direct kernel (conv_op_dnnl.cc
// says which).
#pragma once

#include "operators/conv_op.h"

namespace doppio {

// dW[c, i, j] = sum over n, oh, ow of dY[n, c, oh, ow] * X[n, c, ih, iw] with
// ih = oh * stride - pad + i * dilation (likewise iw); dbias[c] = sum of
// dY[., c]. Channels split over the intra-op threads; each channel sums in
// one fixed order, so the bits do not depend on the thread count.
void DepthwiseWeightGradient(const ConvProblem& p, const float* x, const float* dy, float* dw,
                             float* dbias);

}  // namespace doppio
