// The Parallelize pass's last phase for several processes: the collective
// schedule check (collective_schedule.h) in the init net.
#include <map>
#include <string>
#include <vector>

#include "parallel/collective_schedule.h"
#include "parallel/data_parallel_phases.h"

namespace doppio {

std::map<std::string, TensorShape> ReplicaBlobShapes(const ParallelPlan& plan) {
  const std::map<std::string, TensorShape>& inferred = plan.init_shapes;
  std::map<std::string, TensorShape> shapes;
  for (const Replica& replica : plan.replicas) {
    for (const auto& entry : inferred) {
      shapes[plan.shared.count(entry.first) ? entry.first : replica.prefix + entry.first] =
          entry.second;
    }
    // A dense gradient has its param's dtype and shape.
    for (const auto& entry : plan.param_to_grad) {
      auto param = inferred.find(entry.first);
      if (param != inferred.end()) shapes[replica.prefix + entry.second] = param->second;
    }
  }
  return shapes;
}

void AddScheduleCheck(const ParallelPlan& plan, const ParallelizeOptions& options,
                      const std::map<std::string, TensorShape>& shapes, const NetDef& net,
                      NetDef* init) {
  if (!plan.distributed) return;
  InsertScheduleCheck(init, {&net}, options.rendezvous.common_world, shapes);
}

}  // namespace doppio
