// The planning phases of the Parallelize pass (data_parallel_phases.h).
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "core/backward.h"
#include "core/enforce.h"
#include "core/schema.h"
#include "core/shape_walk.h"
#include "parallel/combine_spatial_bn.h"
#include "parallel/data_parallel_phases.h"
#include "parallel/device_collectives.h"
#include "parallel/distributed.h"
#include "parallel/mixed_precision.h"
#include "parallel/shared_model.h"

namespace doppio {

// Each refusal names the option as Parallelize's callers spell it, so a
// ValueError says which keyword argument to change.
void ValidateParallelizeOptions(const ParallelizeOptions& options) {
  DOPPIO_ENFORCE_ARG(!options.devices.empty(), "Parallelize: devices: the device list is empty");
  std::set<int> seen;
  for (int device : options.devices) {
    DOPPIO_ENFORCE_ARG(device >= 0, "Parallelize: devices: ids must be >= 0, got ", device);
    DOPPIO_ENFORCE_ARG(seen.insert(device).second, "Parallelize: devices: device ", device,
                       " is listed twice");
  }
  // DevicePrefix refuses the device types the pass does not handle.
  DevicePrefix(options.device_type, options.devices.front());
  DOPPIO_ENFORCE_ARG(options.num_threads_per_device >= 1,
                     "Parallelize: num_threads_per_device must be >= 1, got ",
                     options.num_threads_per_device);
  DOPPIO_ENFORCE_ARG(!options.net_type.empty(), "Parallelize: net_type is empty");
  DOPPIO_ENFORCE_ARG(!options.shared_model || options.device_type == CPU,
                     "Parallelize: shared_model is only supported on CPU devices");
  DOPPIO_ENFORCE_ARG(options.accumulate_steps >= 1,
                     "Parallelize: accumulate_steps must be >= 1, got ",
                     options.accumulate_steps);
  if (options.shard_optimizer_state) {
    DOPPIO_ENFORCE_SUPPORTED(options.device_type == CPU,
                             "Parallelize: shard_optimizer_state on CUDA devices is not "
                             "implemented yet (its block collectives have CPU kernels only)");
    DOPPIO_ENFORCE_ARG(!options.shared_model && !options.local_updates,
                       "Parallelize: shard_optimizer_state cannot be combined with ",
                       options.shared_model ? "shared_model" : "local_updates",
                       ": it shards the state of one update of reduced gradients");
  }
  DOPPIO_ENFORCE_ARG(options.init_loss_scale > 0 && std::isfinite(options.init_loss_scale),
                     "Parallelize: init_loss_scale must be positive and finite, got ",
                     options.init_loss_scale);
  DOPPIO_ENFORCE_ARG(options.loss_scale_growth_interval >= 1,
                     "Parallelize: loss_scale_growth_interval must be >= 1, got ",
                     options.loss_scale_growth_interval);
  DOPPIO_ENFORCE_SUPPORTED(
      ParsePrecision(options.precision) == DataType::kFloat || options.device_type == CPU,
      "Parallelize: precision '", options.precision,
      "' on CUDA devices waits for the GPU kernels; CPU devices run it");
  ValidateRendezvous(options.rendezvous);
}

std::string QuotedNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ", ";
    joined += "'" + name + "'";
  }
  return joined;
}

namespace {

// The last index of train_ops that reads or writes any of `blobs`, or -1.
int LastTouch(const std::vector<OperatorDef>& train_ops, const std::set<std::string>& blobs) {
  int last = -1;
  for (int i = 0; i < static_cast<int>(train_ops.size()); ++i) {
    for (const auto* names : {&train_ops[i].input(), &train_ops[i].output()}) {
      for (const std::string& name : *names) {
        if (blobs.count(name)) last = i;
      }
    }
  }
  return last;
}

// Every blob the template's nets name, and every output of train_ops: the
// names the pass's own blobs must not take.

// CUDA replicas gather sparse rows on the first device through staged
// copies (DeviceCollectives::GatherRows), whose names must be free too.
void CheckSparseNames(const SparseGradientSync& sync, const ParallelPlan& plan,
                      const std::set<std::string>& template_blobs, int device_type) {
  DOPPIO_ENFORCE(!plan.shared.count(sync.slice.indices) && !plan.shared.count(sync.slice.values),
                 "Parallelize: the sparse gradient of parameter '", sync.param, "' ('",
                 sync.slice.indices, "', '", sync.slice.values,
                 "') is listed as shared; each device concatenates every device's own");
  if (device_type != CUDA) return;
  const int first = plan.replicas.front().device_option.cuda_gpu_id();
  for (size_t r = 1; r < plan.replicas.size(); ++r) {
    const int peer = plan.replicas[r].device_option.cuda_gpu_id();
    for (const std::string& gathered : {sync.gathered.indices, sync.gathered.values}) {
      const std::string staged = StagedCopyName(gathered, peer);
      DOPPIO_ENFORCE(!template_blobs.count(staged), "Parallelize: blob '", staged,
                     "' already exists in the model; the pass needs that name to gather "
                     "parameter '", sync.param, "''s sparse gradient on device ", first);
    }
  }
}

// Params in the reverse order of their first use by a forward op (params no
// forward op reads first): backward finishes the last layer's gradient first.
std::vector<std::string> ReductionOrder(const DataParallelTemplate& model,
                                        const std::map<std::string, std::string>& param_to_grad) {
  std::map<std::string, int> first_use;
  for (int i = 0; i < model.net.op_size(); ++i) {
    for (const std::string& input : model.net.op(i).input()) first_use.emplace(input, i);
  }
  std::vector<std::pair<int, std::string>> order;
  for (const auto& entry : param_to_grad) {
    auto use = first_use.find(entry.first);
    order.emplace_back(use == first_use.end() ? -1 : use->second, entry.first);
  }
  std::sort(order.rbegin(), order.rend());
  std::vector<std::string> params;
  for (const auto& item : order) params.push_back(item.second);
  return params;
}

// Every blob `op` names, its net arguments' blobs included (If, While and
// RecurrentNetwork read blobs from inside their step nets).
std::set<std::string> BlobsNamedBy(const OperatorDef& op) {
  std::set<std::string> names;
  OperatorDef copy = op;
  RenameOpBlobs(&copy, [&names](const std::string& name) {
    names.insert(name);
    return name;
  });
  return names;
}

}  // namespace

std::set<std::string> TemplateBlobs(const DataParallelTemplate& model, const ParallelPlan& plan) {
  std::set<std::string> blobs;
  for (const NetDef* net : {&model.param_init_net, &model.net, &plan.update_net}) {
    for (const OperatorDef& op : net->op()) {
      blobs.insert(op.input().begin(), op.input().end());
      blobs.insert(op.output().begin(), op.output().end());
    }
  }
  for (const OperatorDef& op : plan.train_ops) {
    blobs.insert(op.output().begin(), op.output().end());
  }
  return blobs;
}

std::vector<std::string> ParamsNoLossDependsOn(const DataParallelTemplate& model) {
  // Backwards from the losses: an op that writes a blob a loss depends on
  // makes the loss depend on everything it names. Overwritten values count
  // too, which can only call a param used, never unused.
  std::set<std::string> needed(model.losses.begin(), model.losses.end());
  for (int i = model.net.op_size() - 1; i >= 0; --i) {
    const OperatorDef& op = model.net.op(i);
    bool feeds_loss = false;
    for (const std::string& output : op.output()) feeds_loss = feeds_loss || needed.count(output);
    if (!feeds_loss) continue;
    const std::set<std::string> named = BlobsNamedBy(op);
    needed.insert(named.begin(), named.end());
  }
  std::vector<std::string> unused;
  for (const std::string& param : model.params) {
    if (!needed.count(param)) unused.push_back(param);
  }
  return unused;
}

void ValidateParallelize(const DataParallelTemplate& model, const ParallelizeOptions& options) {
  ValidateParallelizeOptions(options);
  std::set<std::string> forward_outputs;
  for (const OperatorDef& op : model.net.op()) {
    forward_outputs.insert(op.output().begin(), op.output().end());
  }
  for (const std::string& loss : model.losses) {
    DOPPIO_ENFORCE(forward_outputs.count(loss), "Parallelize: loss '", loss,
                   "' is not produced by any op of net '", model.net.name(), "'");
  }
  DOPPIO_ENFORCE(!model.losses.empty() || model.param_update_net.op_size() == 0,
                 "Parallelize: net '", model.net.name(),
                 "' has parameter update ops but no losses to compute gradients from");
}

std::vector<Replica> PlanReplicas(const ParallelizeOptions& options) {
  std::vector<Replica> replicas;
  for (int device : options.devices) {
    Replica replica;
    replica.prefix = DevicePrefix(options.device_type, device);
    replica.device_option.set_device_type(options.device_type);
    replica.device_option.set_cuda_gpu_id(device);
    replicas.push_back(replica);
  }
  return replicas;
}

void PlanGradients(const DataParallelTemplate& model, ParallelPlan* plan) {
  plan->train_ops.assign(model.net.op().begin(), model.net.op().end());
  plan->num_forward_ops = model.net.op_size();
  plan->update_net = model.param_update_net;
  if (model.losses.empty()) return;
  const BackwardResult backward =
      model.backward ? *model.backward : AddGradientOperators(model.net, model.losses);
  for (const std::string& param : model.params) {
    auto found = backward.gradients.find(param);
    if (found == backward.gradients.end()) continue;  // the losses do not reach it
    if (found->second.IsSparse()) {
      plan->sparse_param_to_grad[param] = found->second;
    } else {
      plan->param_to_grad[param] = found->second.dense;
    }
  }
  plan->train_ops.insert(plan->train_ops.end(), backward.ops.begin(), backward.ops.end());
  // A param that gets no gradient because no loss depends on it at all is
  // a model bug (a layer built but not wired in) that would otherwise train
  // silently without it. A param whose path to the losses is cut (a
  // StopGradient after frozen layers, as Detectron's FREEZE_AT does) is
  // frozen on purpose and kept out of the reductions, as Caffe2 does.
  const std::vector<std::string> unused = ParamsNoLossDependsOn(model);
  if (!unused.empty()) {
    DOPPIO_THROW_ARG(
        "Parallelize: parameter", unused.size() > 1 ? "s " : " ", QuotedNames(unused),
        unused.size() > 1 ? " get" : " gets", " no gradient: no loss of net '", model.net.name(),
        "' depends on ", unused.size() > 1 ? "them" : "it", " (losses: ",
        QuotedNames(model.losses), "). Wire the layer into a loss, or leave it out of the "
        "model's params; to freeze a parameter on purpose, keep it in the forward pass "
        "behind StopGradient");
  }
}

void PlanSharing(const DataParallelTemplate& model, const ParallelizeOptions& options,
                 ParallelPlan* plan) {
  plan->shared.insert(options.shared_blobs.begin(), options.shared_blobs.end());
  if (options.shared_model) {
    CheckSharedModelTemplate(model, plan->train_ops);
    plan->master_params.insert(model.params.begin(), model.params.end());
  }
  for (const auto& entry : plan->param_to_grad) {
    DOPPIO_ENFORCE(!plan->shared.count(entry.first) && !plan->shared.count(entry.second),
                   "Parallelize: parameter '", entry.first, "' or its gradient '", entry.second,
                   "' is listed as shared; parameters are replicated per device");
  }
  plan->distributed = IsDistributed(options.rendezvous);
  plan->local_updates = options.local_updates;
}

void PlanCombinedBatchNorm(const ParallelizeOptions& options, ParallelPlan* plan) {
  const int num_devices = static_cast<int>(plan->replicas.size());
  if (!options.combine_spatial_bn || num_devices < 2) return;
  for (auto& entry : CombineSpatialBN(&plan->train_ops, num_devices)) {
    plan->after_op[entry.first].statistics = std::move(entry.second);
  }
}

void PlanSparseGradients(const DataParallelTemplate& model, const ParallelizeOptions& options,
                         ParallelPlan* plan) {
  if (plan->distributed && !plan->sparse_param_to_grad.empty()) {
    DOPPIO_NOT_IMPLEMENTED(
        "Parallelize: sparse gradients across shards (rendezvous with num_shards ",
        options.rendezvous.num_shards, ") are not implemented yet; parameter '",
        plan->sparse_param_to_grad.begin()->first, "' has one");
  }
  // One replica, or replicas updating alone, apply their own slices as they are.
  if (plan->replicas.size() < 2 || plan->sparse_param_to_grad.empty() || options.local_updates) {
    return;
  }
  const std::set<std::string> template_blobs = TemplateBlobs(model, *plan);
  std::vector<SparseGradientSync> syncs =
      PlanSparseGradientSync(plan->sparse_param_to_grad, template_blobs);
  for (const SparseGradientSync& sync : syncs) {
    CheckSparseNames(sync, *plan, template_blobs, options.device_type);
  }
  UseAllDevicesSlices(syncs, &plan->update_net);
  for (SparseGradientSync& sync : syncs) {
    plan->sparse_param_to_grad[sync.param] = sync.gathered;
    const int last = LastTouch(plan->train_ops, {sync.slice.indices, sync.slice.values});
    DOPPIO_ENFORCE(last >= 0, "Parallelize: no op of net '", model.net.name(),
                   "' or its backward touches the sparse gradient of '", sync.param, "'");
    plan->after_op[last].sparse.push_back(std::move(sync));
  }
}

void PlanAccumulation(const DataParallelTemplate& model, const ParallelizeOptions& options,
                      ParallelPlan* plan) {
  plan->accumulate_steps = options.accumulate_steps;
  if (options.accumulate_steps < 2) return;
  if (!plan->sparse_param_to_grad.empty()) {
    DOPPIO_NOT_IMPLEMENTED(
        "Parallelize: accumulate_steps ", options.accumulate_steps, " with sparse gradients is "
        "not implemented yet; parameter '", plan->sparse_param_to_grad.begin()->first,
        "' has one");
  }
  if (options.shared_model) {
    DOPPIO_NOT_IMPLEMENTED("Parallelize: accumulate_steps > 1 with shared_model is not "
                              "implemented yet");
  }
  const std::set<std::string> template_blobs = TemplateBlobs(model, *plan);
  for (const auto& entry : plan->param_to_grad) {
    const std::string& param = entry.first;
    const std::string& grad = entry.second;
    const std::string accumulator = grad + "_accumulated";
    DOPPIO_ENFORCE(!template_blobs.count(accumulator), "Parallelize: blob '", accumulator,
                   "' already exists in the model; accumulate_steps needs that name to sum "
                   "parameter '", param, "''s gradient over the micro-batches");
    plan->accumulators[grad] = accumulator;
  }
  for (const char* name : {kAccumulateStepBlob, kAccumulateLimitBlob, kAccumulateMoreBlob}) {
    DOPPIO_ENFORCE(!template_blobs.count(name), "Parallelize: blob '", name,
                   "' already exists in the model; accumulate_steps needs that name for its "
                   "micro-step loop");
  }
  plan->fed_inputs = FedInputs(model, *plan);
  for (const std::string& fed : plan->fed_inputs) {
    DOPPIO_ENFORCE_ARG(!template_blobs.count(fed + kFedBatchSuffix), "Parallelize: blob '",
                       fed, kFedBatchSuffix, "' already exists in the model; accumulate_steps "
                       "needs that name to keep the fed batch '", fed, "' for the step");
  }
}

std::vector<std::string> FedInputs(const DataParallelTemplate& model, const ParallelPlan& plan) {
  std::set<std::string> made(model.params.begin(), model.params.end());
  for (const OperatorDef& op : model.param_init_net.op()) {
    made.insert(op.output().begin(), op.output().end());
  }
  std::vector<std::string> fed;
  for (const OperatorDef& op : model.net.op()) {
    for (const std::string& input : op.input()) {
      // A shared blob is one for all replicas: no replica's rows to cut.
      if (made.count(input) || plan.shared.count(input)) continue;
      if (std::find(fed.begin(), fed.end(), input) == fed.end()) fed.push_back(input);
    }
    made.insert(op.output().begin(), op.output().end());
  }
  return fed;
}

void PlanDenseReductions(const DataParallelTemplate& model, const ParallelizeOptions& options,
                         ParallelPlan* plan) {
  if ((plan->replicas.size() < 2 && !plan->distributed) || options.local_updates) return;
  // CUDA replicas send each gradient across the shards alone
  // (parallel/distributed.h).
  const bool bucketed = plan->distributed && options.device_type == CPU;
  const std::map<std::string, int64_t> elements =
      bucketed ? FloatElements(plan->init_shapes) : std::map<std::string, int64_t>();
  std::map<std::string, int> last_touch;
  std::vector<GradientToReduce> across_shards;
  for (const std::string& param : ReductionOrder(model, plan->param_to_grad)) {
    const std::string& grad = plan->param_to_grad.at(param);
    // Summing earlier would change what later backward ops of a replica read.
    last_touch[grad] = LastTouch(plan->train_ops, {grad});
    plan->after_op[last_touch[grad]].gradients.push_back(grad);
    auto known = elements.find(param);  // a dense gradient has its param's shape
    across_shards.push_back({grad, known == elements.end() ? -1 : known->second});
  }
  if (!plan->distributed) return;
  const double cap_mb = bucketed ? options.rendezvous.bucket_cap_mb : 0;
  for (std::vector<std::string>& bucket : PlanGradientBuckets(across_shards, cap_mb)) {
    int after = -1;
    for (const std::string& grad : bucket) after = std::max(after, last_touch.at(grad));
    plan->after_op[after].shard_buckets.push_back(std::move(bucket));
  }
}

void PlanShardedOptimizer(const DataParallelTemplate& model, const ParallelizeOptions& options,
                          ParallelPlan* plan) {
  if (!options.shard_optimizer_state || !plan->distributed) return;
  // A dense gradient has its param's shape.
  std::map<std::string, TensorShape> seeds = plan->init_shapes;
  for (const auto& entry : plan->param_to_grad) {
    auto param = plan->init_shapes.find(entry.first);
    if (param != plan->init_shapes.end()) seeds[entry.second] = param->second;
  }
  const std::map<std::string, TensorShape> shapes = InferNetShapes(plan->update_net, seeds);
  const std::set<std::string> taken = TemplateBlobs(model, *plan);
  ShardedStateInputs inputs;
  inputs.update_net = &plan->update_net;
  inputs.param_to_grad = &plan->param_to_grad;
  inputs.shared = &plan->shared;
  inputs.shapes = &shapes;
  inputs.init_shapes = &plan->init_shapes;
  inputs.train_ops = &plan->train_ops;
  inputs.taken = &taken;
  plan->sharded = PlanShardedState(inputs, options.rendezvous.num_shards,
                                   options.rendezvous.shard_id);
  std::vector<std::vector<std::string>> grad_buckets;
  for (const auto& entry : plan->after_op) {
    grad_buckets.insert(grad_buckets.end(), entry.second.shard_buckets.begin(),
                        entry.second.shard_buckets.end());
  }
  plan->sharded.param_buckets = ParamBuckets(grad_buckets, plan->param_to_grad);
}

namespace {

// The init ops that make only optimizer state, which the first replica
// alone keeps; an op making state and other blobs has no right placement.
std::vector<bool> StateInitOps(const DataParallelTemplate& model, const ShardedState& sharded) {
  std::set<std::string> state;
  for (const auto& entry : sharded.state) state.insert(entry.second.begin(), entry.second.end());
  std::vector<bool> master_only;
  for (const OperatorDef& op : model.param_init_net.op()) {
    int made = 0;
    for (const std::string& output : op.output()) made += state.count(output);
    if (made > 0 && made != op.output_size()) {
      DOPPIO_NOT_IMPLEMENTED(
          "Parallelize: shard_optimizer_state: init op ", op.type(), " '", op.name(),
          "' makes optimizer state and other blobs (outputs ",
          QuotedNames({op.output().begin(), op.output().end()}), "); make the state with "
          "ops of its own");
    }
    master_only.push_back(made > 0);
  }
  return master_only;
}

}  // namespace

void PlanInit(const DataParallelTemplate& model, const ParallelizeOptions& options,
              ParallelPlan* plan) {
  if (options.shared_model) plan->init_master_only = MasterOnlyInitOps(model, plan->train_ops);
  if (plan->sharded.enabled) plan->init_master_only = StateInitOps(model, plan->sharded);
  if (plan->replicas.size() < 2 && !plan->distributed) return;
  std::set<std::string> initialized;
  for (const OperatorDef& op : model.param_init_net.op()) {
    initialized.insert(op.output().begin(), op.output().end());
  }
  std::vector<std::string> candidates = model.params;
  if (options.broadcast_computed_params) {
    candidates.insert(candidates.end(), model.computed_params.begin(),
                      model.computed_params.end());
  }
  std::set<std::string> listed;
  for (const std::string& blob : candidates) {
    // A blob the init net does not make (loaded from a checkpoint later) is
    // synced by FinalizeAfterCheckpoint instead.
    if (!initialized.count(blob) || plan->shared.count(blob) || !listed.insert(blob).second) {
      continue;
    }
    plan->init_broadcasts.push_back(blob);
  }
}

ParallelPlan PlanParallelize(const DataParallelTemplate& model,
                             const ParallelizeOptions& options) {
  ParallelPlan plan;
  plan.replicas = PlanReplicas(options);
  plan.init_shapes = InferNetShapes(model.param_init_net, {});
  PlanGradients(model, &plan);
  PlanLossScaling(model, options, &plan);
  PlanSharing(model, options, &plan);
  PlanCombinedBatchNorm(options, &plan);
  PlanSparseGradients(model, options, &plan);
  PlanAccumulation(model, options, &plan);
  PlanDenseReductions(model, options, &plan);
  PlanShardedOptimizer(model, options, &plan);
  PlanInit(model, options, &plan);
  return plan;
}

}  // namespace doppio
