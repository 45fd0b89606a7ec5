// LearningRate(iteration) -> learning rate, Caffe2's schedule op: the output
// is base_lr * lr_scale * f(iteration), where f is the multiplier of the
// chosen `policy` (Caffe2's learning_rate_functors.h). For SGD base_lr is
// usually negative, so the update is param += lr * grad.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/operator.h"

namespace doppio {

// The multiplier of one policy as a function of the iteration.
using LearningRateMultiplier = std::function<double(int64_t)>;

// The multiplier of `policy`, reading its arguments from `op` with `prefix`
// ("" at top level, "sub_policy_3_" inside composite). Unknown policies and
// invalid arguments are errors naming the op.
LearningRateMultiplier MakeLearningRateMultiplier(const OperatorBase& op,
                                                  const std::string& policy,
                                                  const std::string& prefix);

// The op's schedule, read once for the CPU and CUDA ops: base_lr (required)
// times lr_scale times the multiplier of `policy` (required).
struct LearningRateSchedule {
  double base_lr = 0;
  LearningRateMultiplier multiplier;
  double At(int64_t iteration) const { return base_lr * multiplier(iteration); }
};
LearningRateSchedule ReadLearningRateSchedule(const OperatorBase& op);

class LearningRateOp final : public Operator<CPUContext> {
 public:
  LearningRateOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  LearningRateSchedule schedule_;
};

}  // namespace doppio
