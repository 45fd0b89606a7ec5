// LRN (local response normalization across channels) and LRNGradient, as
// in Caffe2 (Caffe's AlexNet layer). For a 4-D NCHW or NHWC input:
//   scale_c = bias + alpha / size * sum of X_k^2 over the `size` channels k
//             centred on c (clipped at the ends),
//   Y_c     = X_c * scale_c^(-beta).
#pragma once

#include "core/operator.h"

namespace doppio {

struct LRNArgs {
  int size = 0;  // odd, > 0
  double alpha = 0;
  double beta = 0;
  double bias = 1;
  bool channels_last = false;
};

// Input X; outputs Y [, scale].
class LRNOp final : public Operator<CPUContext> {
 public:
  LRNOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  LRNArgs args_;
};

// Inputs X, Y, dY; output dX. The scale is recomputed from X.
class LRNGradientOp final : public Operator<CPUContext> {
 public:
  LRNGradientOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  template <typename T>
  void Run();
  LRNArgs args_;
};

}  // namespace doppio
