// YellowFin (https://arxiv.org/abs/1706.03471; Caffe2's YellowFin op): a
// momentum SGD step whose learning rate and momentum tune themselves from
// moving averages of the gradient's norm, variance and curvature range.
#pragma once

#include <cstdint>

#include "core/operator.h"

namespace doppio {

// Inputs: param, moment, lr_avg [1], mu_avg [1], curv_win [curv_win_width],
// g_avg, g2_avg (param's shape), scalars_memory [5], grad, iter (int64 on
// the host). Outputs: the first eight, updated (in place as a rule).
// scalars_memory holds the moving averages of |g|, |g|^2, log min and log
// max |g|^2 over the window, and the distance to the optimum.
// Arguments: beta (0.999), curv_win_width (20), epsilon (1e-6), nesterov,
// zero_debias (true).
class YellowFinOp final : public Operator<CPUContext> {
 public:
  YellowFinOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // The moving averages of one step; writes the debiased averages.
  struct Statistics {
    float g_norm2_deb, g_norm_deb, h_min_deb, h_max_deb, distance_deb, variance;
  };
  Statistics UpdateAverages(int64_t iter, int64_t size, const float* grad);
  // The step's lr and mu from the statistics (the tuner of the paper).
  void TuneLrMu(const Statistics& s, float lr_avg, float mu_avg);
  float Average(float value, float average) const;

  int curv_win_width_;
  bool nesterov_;
  bool zero_debias_;
  float epsilon_;
  float beta_;
  float debias_ = 1.0f;
};

}  // namespace doppio
