// The oneDNN (libdnnl) backend of Conv and ConvGradient for float32.
//
// Each object belongs to one op and caches its primitives for the last
// shape it saw, so a net that runs the same shapes every iteration builds
// them once. The buffers those primitives need (operands reordered into
// oneDNN's blocked layouts, scratchpads) live only during Run, in the
// running thread's ThreadArena (operators/thread_arena.h): kept per op they
// added up to more than the net's blobs. When oneDNN rejects a case, Run
// returns false and the op falls back to im2col + GEMM; the rejection is
// remembered for that shape.
//
// Thread-safety: like the op that owns it, one Run at a time. Different
// objects may run at once on different threads: each uses its own thread's
// arena.
#pragma once

#include <memory>
#include <vector>

#include "core/layout_advice.h"
#include "operators/conv_op.h"
#include "operators/dnnl_eltwise.h"

namespace doppio {

// What an inference-only caller (ConvFusion) may ask beyond plain Conv.
struct DnnlConvForwardOptions {
  // An activation (Relu, Clip, Sigmoid, ...) as a oneDNN post-op, so Y is
  // written once.
  EltwiseFn post_op;
  // The filter is a constant: its reorder into oneDNN's layout is kept and
  // redone only when the filter's storage or the shape changes (Caffe2's
  // ideep ConvFusion does the same outside training_mode).
  bool constant_filter = false;
  // ConvFusion's sum fusions: Y = conv + sum (then post_op), `sum` of Y's
  // shape in Y's layout; it may be Y itself (in place, as Caffe2's).
  const float* sum = nullptr;
  // An inference primitive although nothing is fused (a Conv with Caffe2's
  // training_mode 0): oneDNN may then pick other layouts (NHWC with AVX-512
  // where a training primitive takes 16-channel blocks).
  bool inference = false;
  ConvAlgorithm algorithm = ConvAlgorithm::kAuto;
};

// The layout oneDNN's forward convolution reads X in for `p` on this
// machine (its ISA and the shape decide): kNchw / kNhwc when it reads our
// tensor of that order as it is, kOther when it reorders X into blocks.
ActivationLayout DnnlConvSourceLayout(const ConvProblem& p, const EltwiseFn& post_op, bool with_sum,
                                      bool inference, ConvAlgorithm algorithm);

class DnnlConvForward {
 public:
  DnnlConvForward();
  ~DnnlConvForward();
  // Y = conv(X, W) (+ bias when non-null), all in the problem's layouts.
  bool Run(const ConvProblem& p, const float* x, const float* w, const float* bias, float* y,
           const DnnlConvForwardOptions& options = {});

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
           float* dbias, float* dx, ConvAlgorithm algorithm = ConvAlgorithm::kAuto);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace doppio
