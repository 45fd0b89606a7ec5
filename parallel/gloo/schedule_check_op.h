// VerifyCollectiveSchedule: every rank's collective schedule compared over a
// common world before any collective of it runs (parallel/collective_schedule.h).
#pragma once

#include <vector>

#include "core/operator.h"
#include "parallel/collective_schedule.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {

// Exchanges a digest of this rank's schedule (its "schedule" argument) with
// every rank; when any digest differs, exchanges the whole schedules and
// throws, on every rank alike, an error naming the first collective where
// the lowest disagreeing rank and rank 0 differ. In place on the world.
class VerifyCollectiveScheduleOp final : public Operator<CPUContext> {
 public:
  VerifyCollectiveScheduleOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  // Every rank's schedule, rank-major (the slow path after a mismatch);
  // `sizes`: each rank's encoded size.
  std::vector<std::vector<ScheduledCollective>> GatherSchedules(
      const CommonWorld& world, const std::vector<int64_t>& sizes);

  std::vector<ScheduledCollective> schedule_;
  // What the ranks compare, worked out once from the op's arguments.
  uint64_t digest_;
  std::string encoded_;
};

}  // namespace doppio
