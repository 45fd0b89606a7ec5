// The Parallelize pass's last phase for several processes: the collective
// schedule check (collective_schedule.h) in the init net.
#include <map>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/shape_walk.h"
#include "parallel/collective_schedule.h"
#include "parallel/data_parallel_phases.h"

namespace doppio {

std::map<std::string, TensorShape> ReplicaBlobShapes(const ParallelPlan& plan,
                                                     const DataParallelTemplate& model) {
  const std::map<std::string, TensorShape> inferred = InferNetShapes(model.param_init_net, {});
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

void AddScheduleCheck(const ParallelPlan& plan, const DataParallelTemplate& model,
                      const ParallelizeOptions& options, const NetDef& net, NetDef* init) {
  if (!plan.distributed) return;
  const std::string& world = options.rendezvous.common_world;
  int create = -1;
  for (int i = 0; i < init->op_size(); ++i) {
    if (init->op(i).type() == "CreateCommonWorld" && init->op(i).output_size() == 1 &&
        init->op(i).output(0) == world) {
      create = i;
    }
  }
  DOPPIO_ENFORCE(create >= 0, "Parallelize: the init net has no CreateCommonWorld for '", world,
                 "' to check the collective schedule after");
  // The check goes right after the world is made; a collective cannot come
  // earlier, so the schedule of the whole init net is what follows it.
  const DeviceOption device = init->op(create).device_option();
  init->mutable_op()->Add();
  for (int i = init->op_size() - 1; i > create + 1; --i) {
    init->mutable_op()->SwapElements(i, i - 1);
  }
  const std::vector<ScheduledCollective> schedule =
      CollectiveSchedule({init, &net}, world, ReplicaBlobShapes(plan, model));
  *init->mutable_op(create + 1) = ScheduleCheckOp(schedule, world, device);
}

}  // namespace doppio
