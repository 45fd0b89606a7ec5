// The oneDNN (libdnnl) backend of Conv and ConvGradient for float32.
//
// Each object belongs to one op and caches its primitives (and the
// reordered-layout buffers they need) for the last shape it saw, so a net
// that runs the same shapes every iteration builds them once. When oneDNN
// rejects a case, Run returns false and the op falls back to im2col + GEMM;
// the rejection is remembered for that shape.
//
// Thread-safety: like the op that owns it, one Run at a time.
#pragma once

#include <memory>
#include <vector>

#include "operators/conv_op.h"

namespace doppio {

class DnnlConvForward {
 public:
  DnnlConvForward();
  ~DnnlConvForward();
  // Y = conv(X, W) (+ bias when non-null), all in the problem's layouts.
  bool Run(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class DnnlConvBackward {
 public:
  DnnlConvBackward();
  ~DnnlConvBackward();
  // dW (always), dbias (when non-null, summed over N and space) and dX (when
  // non-null) from X, W and dY.
  bool Run(const ConvProblem& p, const float* x, const float* w, const float* dy, float* dw,
           float* dbias, float* dx);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace doppio
