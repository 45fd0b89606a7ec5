// The Parallelize driver: validate, plan, emit (data_parallel_phases.h).
#include "parallel/data_parallel.h"

#include "core/enforce.h"
#include "parallel/data_parallel_phases.h"

namespace doppio {

std::string DevicePrefix(int device_type, int device_id) {
  if (device_type == CUDA) return "gpu_" + std::to_string(device_id) + "/";
  if (device_type != CPU) {
    DOPPIO_THROW_ARG(
        "Parallelize: device type ", device_type, " is not supported; only CPU (",
        static_cast<int>(CPU), ") and CUDA (", static_cast<int>(CUDA), ")");
  }
  return "cpu_" + std::to_string(device_id) + "/";
}

std::string DevicePrefixOf(int device_type, const std::string& name) {
  const std::string kind = DevicePrefix(device_type, 0).substr(0, 4);  // "cpu_" or "gpu_"
  if (name.compare(0, kind.size(), kind) != 0) return "";
  size_t end = kind.size();
  while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
  if (end == kind.size() || end >= name.size() || name[end] != '/') return "";
  return name.substr(0, end + 1);
}

Parallelized Parallelize(const DataParallelTemplate& original,
                         const ParallelizeOptions& options) {
  ValidateParallelize(original, options);
  PrecisionPlan precision;
  const DataParallelTemplate model = PlanPrecision(original, options, &precision);
  Parallelized result;
  result.plan = PlanParallelize(model, options);
  result.plan.precision = std::move(precision);
  result.net = EmitTrainNet(result.plan, model, options);
  result.param_init_net = EmitInitNet(result.plan, model, options);
  if (result.plan.distributed) {
    result.schedule_shapes = ReplicaBlobShapes(result.plan);
    AddScheduleCheck(result.plan, options, result.schedule_shapes, result.net,
                     &result.param_init_net);
  }
  result.sharded_blobs = ShardedBlobs(result.plan);
  result.shard_state_net = ShardStateNet(result.plan);
  result.param_to_grad = result.plan.param_to_grad;
  result.sparse_param_to_grad = result.plan.sparse_param_to_grad;
  result.device_param_to_grad = DeviceParamToGrad(result.plan, options);
  return result;
}

}  // namespace doppio
