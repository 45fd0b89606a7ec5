// The emitting phases of the Parallelize pass (data_parallel_phases.h): a
// ParallelPlan becomes the training and init nets. Nothing here decides
// anything the plan does not say.
#include <set>
#include <utility>

#include "core/argument.h"
#include "core/enforce.h"
#include "core/schema.h"
#include "parallel/data_parallel_phases.h"
#include "parallel/device_collectives.h"
#include "parallel/distributed.h"
#include "parallel/shard_block.h"

namespace doppio {
namespace {

// Clones template ops onto the replicas under the plan's sharing rules.
class Cloner {
 public:
  explicit Cloner(const ParallelPlan& plan) : plan_(plan) {}

  bool IsShared(const std::string& blob) const { return plan_.shared.count(blob) > 0; }

  // One name per replica; the name itself once when it is shared, and the
  // first replica's name once for a shared model's param.
  std::vector<std::string> RenameAll(const std::string& blob) const {
    if (IsShared(blob)) return {blob};
    if (plan_.master_params.count(blob)) return {plan_.replicas.front().prefix + blob};
    std::vector<std::string> names;
    for (const Replica& replica : plan_.replicas) names.push_back(replica.prefix + blob);
    return names;
  }

  // An op whose outputs are all shared runs once for all replicas. Mixing
  // shared and per-device outputs, or computing a shared blob from a
  // per-device one, has no single right placement, so it is refused.
  bool IsSharedOp(const OperatorDef& op, const std::string& where) const {
    int shared_outputs = 0;
    for (const std::string& output : op.output()) shared_outputs += IsShared(output);
    if (shared_outputs == 0) return false;
    DOPPIO_ENFORCE(shared_outputs == op.output_size(), "Parallelize: op ", op.type(), " '",
                   op.name(), "' in ", where, " writes both shared and per-device blobs (outputs ",
                   QuotedNames({op.output().begin(), op.output().end()}),
                   "); a shared blob must be written by ops whose outputs are all shared");
    for (const std::string& input : op.input()) {
      DOPPIO_ENFORCE(IsShared(input), "Parallelize: op ", op.type(), " '", op.name(), "' in ",
                     where, " writes shared blob '", op.output(0), "' from per-device blob '",
                     input, "'; mark that input shared too or do not share the output");
    }
    return true;
  }

  OperatorDef Clone(const OperatorDef& op, const Replica& replica) const {
    OperatorDef clone = op;
    // Also the blobs named in arguments (RecurrentNetwork's step nets).
    RenameOpBlobs(&clone, [&](const std::string& blob) { return Rename(blob, replica); });
    // The template's random seed stays, the device becomes the replica's.
    const bool has_seed = op.has_device_option() && op.device_option().has_random_seed();
    *clone.mutable_device_option() = replica.device_option;
    if (has_seed) clone.mutable_device_option()->set_random_seed(op.device_option().random_seed());
    return clone;
  }

  // A shared op keeps its own device if it names one (the iteration counter
  // lives on CPU), else runs on the first replica's.
  OperatorDef CloneShared(const OperatorDef& op) const {
    OperatorDef clone = op;
    if (!clone.has_device_option()) {
      *clone.mutable_device_option() = plan_.replicas.front().device_option;
    }
    return clone;
  }

  // Appends replica `r`'s copy of `op` (none when the op is shared or
  // master-only and r is not the first replica).
  void Append(const OperatorDef& op, bool shared_op, bool master_only, size_t r,
              NetDef* out) const {
    if (shared_op || master_only) {
      if (r != 0) return;
      *out->add_op() = shared_op ? CloneShared(op) : Clone(op, plan_.replicas.front());
      return;
    }
    *out->add_op() = Clone(op, plan_.replicas[r]);
  }

  // Every op of `ops` on every replica, replica after replica; ops flagged
  // in master_only go to the first replica alone.
  void AppendReplicaMajor(const std::vector<OperatorDef>& ops, const std::string& where,
                          const std::vector<bool>& master_only, NetDef* out) const {
    const std::vector<bool> shared_op = SharedOps(ops, where);
    for (size_t r = 0; r < plan_.replicas.size(); ++r) {
      for (size_t i = 0; i < ops.size(); ++i) {
        Append(ops[i], shared_op[i], i < master_only.size() && master_only[i], r, out);
      }
    }
  }

  std::vector<bool> SharedOps(const std::vector<OperatorDef>& ops, const std::string& where) const {
    std::vector<bool> shared_op(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) shared_op[i] = IsSharedOp(ops[i], where);
    return shared_op;
  }

 private:
  std::string Rename(const std::string& blob, const Replica& replica) const {
    if (IsShared(blob)) return blob;
    if (plan_.master_params.count(blob)) return plan_.replicas.front().prefix + blob;
    return replica.prefix + blob;
  }

  const ParallelPlan& plan_;
};

std::vector<OperatorDef> OpsOf(const NetDef& net) { return {net.op().begin(), net.op().end()}; }

void AppendAll(std::vector<OperatorDef> ops, NetDef* net) {
  for (OperatorDef& op : ops) *net->add_op() = std::move(op);
}

// Every blob an op reads before any earlier op of the net writes it.
void SetExternalInputs(NetDef* net) {
  std::set<std::string> produced;
  std::set<std::string> listed;
  net->clear_external_input();
  for (const OperatorDef& op : net->op()) {
    for (const auto* names : {&op.input(), &op.control_input()}) {
      for (const std::string& name : *names) {
        if (!produced.count(name) && listed.insert(name).second) net->add_external_input(name);
      }
    }
    for (const std::string& output : op.output()) produced.insert(output);
  }
}

void SetExternalOutputs(const NetDef& template_net, const Cloner& cloner, NetDef* net) {
  net->clear_external_output();
  std::set<std::string> listed;
  for (const std::string& output : template_net.external_output()) {
    for (const std::string& name : cloner.RenameAll(output)) {
      if (listed.insert(name).second) net->add_external_output(name);
    }
  }
}

// An empty net with the template net's name and arguments.
NetDef EmptyNetLike(const NetDef& template_net) {
  NetDef net;
  net.set_name(template_net.name());
  *net.mutable_arg() = template_net.arg();
  return net;
}

// The collectives of one net, in emission order (both chain their ops).
struct NetCollectives {
  NetCollectives(const ParallelPlan& plan, const ParallelizeOptions& options)
      : shards(options.rendezvous, plan.replicas.front().device_option),
        devices(Prefixes(plan), DeviceOptions(plan), options.use_nccl) {}

  static std::vector<std::string> Prefixes(const ParallelPlan& plan) {
    std::vector<std::string> prefixes;
    for (const Replica& replica : plan.replicas) prefixes.push_back(replica.prefix);
    return prefixes;
  }
  static std::vector<DeviceOption> DeviceOptions(const ParallelPlan& plan) {
    std::vector<DeviceOption> options;
    for (const Replica& replica : plan.replicas) options.push_back(replica.device_option);
    return options;
  }

  ShardCollectives shards;
  DeviceCollectives devices;
};

// Concatenation of each replica's slice of one sparse gradient.
void EmitSparseGather(const SparseGradientSync& sync, const ParallelPlan& plan,
                      const ParallelizeOptions& options, const Cloner& cloner,
                      NetCollectives* collectives, NetDef* net) {
  if (options.device_type == CUDA) {
    // Gathered on the first device, then copied out (GatherRows).
    AppendAll(collectives->devices.GatherRows(sync.gathered.indices,
                                              cloner.RenameAll(sync.slice.indices)), net);
    AppendAll(collectives->devices.GatherRows(sync.gathered.values,
                                              cloner.RenameAll(sync.slice.values)), net);
    return;
  }
  const std::vector<std::string> prefixes = NetCollectives::Prefixes(plan);
  for (OperatorDef& op : AllDevicesConcatOps(sync, prefixes, NetCollectives::DeviceOptions(plan))) {
    // A shared model's update runs on the master alone.
    if (options.shared_model && op.output(0).rfind(prefixes.front(), 0) != 0) continue;
    *net->add_op() = std::move(op);
  }
}

void EmitStatistics(const AfterOp& after, const Cloner& cloner, NetCollectives* collectives,
                    NetDef* net) {
  for (const std::string& blob : after.statistics) {
    AppendAll(collectives->devices.Allreduce(blob, cloner.RenameAll(blob)), net);
  }
}

// The gradient reductions after one op: over the replicas, across the
// shards, the sparse concatenations.
void EmitReductions(const AfterOp& after, const ParallelPlan& plan,
                    const ParallelizeOptions& options, const Cloner& cloner,
                    NetCollectives* collectives, NetDef* net) {
  for (const std::string& grad : after.gradients) {
    // A gradient summed across shards next needs the local sum on the first
    // replica only; the bucket's Broadcast hands the total back.
    AppendAll(plan.distributed ? collectives->devices.ReduceToFirst(grad, cloner.RenameAll(grad))
                               : collectives->devices.Allreduce(grad, cloner.RenameAll(grad)),
              net);
  }
  for (const std::vector<std::string>& bucket : after.shard_buckets) {
    std::vector<std::string> firsts;
    for (const std::string& grad : bucket) firsts.push_back(cloner.RenameAll(grad).front());
    if (plan.sharded.enabled) {
      // Only the first replica's blocks are updated (EmitShardedUpdate).
      std::vector<std::string> blocks;
      for (const std::string& grad : bucket) {
        blocks.push_back(plan.replicas.front().prefix + plan.sharded.grad_blocks.at(grad));
      }
      *net->add_op() = collectives->shards.ReduceScatterBlocks(firsts, blocks);
      continue;
    }
    *net->add_op() = collectives->shards.AllreduceBucket(firsts);
    for (const std::string& grad : bucket) {
      AppendAll(collectives->devices.Broadcast(grad, cloner.RenameAll(grad)), net);
    }
  }
  for (const SparseGradientSync& sync : after.sparse) {
    EmitSparseGather(sync, plan, options, cloner, collectives, net);
  }
}

void EmitAfterOp(const AfterOp& after, const ParallelPlan& plan,
                 const ParallelizeOptions& options, const Cloner& cloner,
                 NetCollectives* collectives, NetDef* net) {
  EmitStatistics(after, cloner, collectives, net);
  EmitReductions(after, plan, options, cloner, collectives, net);
}

// ---- gradient accumulation (plan.accumulate_steps > 1) ----


// Zeroed accumulators of each gradient's param's shape and dtype, per replica.
void EmitZeroAccumulators(const ParallelPlan& plan, NetDef* net) {
  for (const auto& entry : plan.param_to_grad) {
    auto known = plan.init_shapes.find(entry.first);
    const int64_t dtype =
        known == plan.init_shapes.end() ? TensorProto::FLOAT : known->second.data_type();
    for (const Replica& replica : plan.replicas) {
      OperatorDef fill = MakeOp("ConstantFill", {replica.prefix + entry.first},
                                {replica.prefix + plan.accumulators.at(entry.second)},
                                replica.device_option);
      SetArgument(&fill, "dtype", dtype);
      *net->add_op() = std::move(fill);
    }
  }
}

// Per replica and fed input: `<fed>_fed_batch` made an alias of `<fed>`, or
// (to_whole) `<fed>` made an alias of the whole batch again.
void EmitFedBatchAliases(const ParallelPlan& plan, bool to_whole, NetDef* net) {
  for (const std::string& fed : plan.fed_inputs) {
    for (const Replica& replica : plan.replicas) {
      const std::string blob = replica.prefix + fed;
      const std::string whole = blob + kFedBatchSuffix;
      *net->add_op() = MakeOp("Alias", {to_whole ? whole : blob}, {to_whole ? blob : whole},
                              replica.device_option);
    }
  }
}

// One micro-step: every replica's forward and backward ops, the statistics
// sums, and each gradient added to its accumulator; then the step counter.
NetDef MicroStepNet(const ParallelPlan& plan, const DataParallelTemplate& model,
                    const ParallelizeOptions& options, const Cloner& cloner,
                    const std::vector<bool>& shared_op, NetCollectives* collectives) {
  NetDef body;
  body.set_name(model.net.name() + "_micro_step");
  body.set_type(options.net_type);
  SetArgument(&body, "num_workers", options.num_threads_per_device);
  for (const std::string& fed : plan.fed_inputs) {
    for (const Replica& replica : plan.replicas) {
      OperatorDef slice =
          MakeOp("MicroBatchSlice", {replica.prefix + fed + kFedBatchSuffix, kAccumulateStepBlob},
                 {replica.prefix + fed}, replica.device_option);
      SetArgument(&slice, "micro_batches", static_cast<int64_t>(plan.accumulate_steps));
      *body.add_op() = std::move(slice);
    }
  }
  for (size_t i = 0; i < plan.train_ops.size(); ++i) {
    for (size_t r = 0; r < plan.replicas.size(); ++r) {
      cloner.Append(plan.train_ops[i], shared_op[i], /*master_only=*/false, r, &body);
    }
    auto after = plan.after_op.find(static_cast<int>(i));
    if (after != plan.after_op.end()) EmitStatistics(after->second, cloner, collectives, &body);
  }
  for (const auto& entry : plan.accumulators) {
    for (const Replica& replica : plan.replicas) {
      const std::string accumulator = replica.prefix + entry.second;
      *body.add_op() = MakeOp("Add", {accumulator, replica.prefix + entry.first}, {accumulator},
                              replica.device_option);
    }
  }
  *body.add_op() = MakeOp("Iter", {kAccumulateStepBlob}, {kAccumulateStepBlob}, DeviceOption());
  return body;
}

// The micro-step loop, then the gradients set to their sums and reduced.
void EmitAccumulatedStep(const ParallelPlan& plan, const DataParallelTemplate& model,
                         const ParallelizeOptions& options, const Cloner& cloner,
                         const std::vector<bool>& shared_op, NetCollectives* collectives,
                         NetDef* net) {
  *net->add_op() = Int64Fill(kAccumulateStepBlob, 0);
  *net->add_op() = Int64Fill(kAccumulateLimitBlob, plan.accumulate_steps);
  const OperatorDef more = MakeOp("LT", {kAccumulateStepBlob, kAccumulateLimitBlob},
                                  {kAccumulateMoreBlob}, DeviceOption());
  *net->add_op() = more;
  EmitZeroAccumulators(plan, net);
  // The fed batches kept whole for the step (aliases: no copy); each
  // micro-step views its rows, and the blob is the whole batch again after.
  EmitFedBatchAliases(plan, /*to_whole=*/false, net);
  OperatorDef loop = MakeOp("While", {kAccumulateMoreBlob}, {}, DeviceOption());
  loop.set_name(model.net.name() + "_micro_steps");
  Argument* cond_net = loop.add_arg();
  cond_net->set_name("cond_net");
  cond_net->mutable_n()->set_name(model.net.name() + "_micro_step_condition");
  *cond_net->mutable_n()->add_op() = more;
  Argument* loop_net = loop.add_arg();
  loop_net->set_name("loop_net");
  *loop_net->mutable_n() = MicroStepNet(plan, model, options, cloner, shared_op, collectives);
  NameLoopBlobs({&cond_net->n(), &loop_net->n()}, &loop);
  *net->add_op() = std::move(loop);
  EmitFedBatchAliases(plan, /*to_whole=*/true, net);
  for (const auto& entry : plan.accumulators) {
    for (const Replica& replica : plan.replicas) {
      *net->add_op() = MakeOp("Copy", {replica.prefix + entry.second},
                              {replica.prefix + entry.first}, replica.device_option);
    }
  }
  for (const auto& entry : plan.after_op) {
    EmitReductions(entry.second, plan, options, cloner, collectives, net);
  }
}

// ---- sharded optimizer state (plan.sharded.enabled) ----

OperatorDef ShardSlice(const std::string& from, const std::string& to, const ShardedState& sharded,
                       const DeviceOption& device_option) {
  OperatorDef op = MakeOp("ShardSlice", {from}, {to}, device_option);
  SetArgument(&op, "num_shards", static_cast<int64_t>(sharded.num_shards));
  SetArgument(&op, "shard_id", static_cast<int64_t>(sharded.shard_id));
  return op;
}

// The first replica cuts each param's block, runs the param's update ops
// on its blocks, and the blocks are allgathered back into the whole params,
// which go to the other replicas. Update ops on whole tensors run on every
// replica, as unsharded.
void EmitShardedUpdate(const ParallelPlan& plan, const DataParallelTemplate& model,
                       const ParallelizeOptions& options, const Cloner& cloner,
                       NetCollectives* collectives, NetDef* net) {
  const ShardedState& sharded = plan.sharded;
  const Replica& first = plan.replicas.front();
  for (const auto& entry : sharded.param_blocks) {
    *net->add_op() = ShardSlice(first.prefix + entry.first, first.prefix + entry.second, sharded,
                                first.device_option);
  }
  const std::vector<OperatorDef> ops = OpsOf(plan.update_net);
  const std::vector<bool> shared_op =
      cloner.SharedOps(ops, "param_update_net '" + model.param_update_net.name() + "'");
  const auto block_of = [&sharded](const std::string& blob) {
    auto param = sharded.param_blocks.find(blob);
    if (param != sharded.param_blocks.end()) return param->second;
    auto grad = sharded.grad_blocks.find(blob);
    return grad != sharded.grad_blocks.end() ? grad->second : blob;
  };
  NetDef updates;
  updates.set_name(model.param_update_net.name() + "_if_finite");
  for (size_t r = 0; r < plan.replicas.size(); ++r) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!sharded.op_param.count(static_cast<int>(i))) {
        cloner.Append(ops[i], shared_op[i], /*master_only=*/false, r, &updates);
      } else if (r == 0) {
        OperatorDef op = ops[i];
        RenameOpBlobs(&op, block_of);
        *updates.add_op() = cloner.Clone(op, first);
      }
    }
  }
  if (plan.loss_scaling.enabled) {
    // The allgathers stay outside the If: every step runs the same
    // collectives, and a skipped step gathers the unchanged blocks.
    EmitShardedUnscale(plan, &collectives->shards, net);
    EmitGuardedUpdates(plan, options, std::move(updates), net);
  } else {
    AppendAll(OpsOf(updates), net);
  }
  for (const std::vector<std::string>& bucket : sharded.param_buckets) {
    std::vector<std::string> blocks, params;
    for (const std::string& param : bucket) {
      blocks.push_back(first.prefix + sharded.param_blocks.at(param));
      params.push_back(first.prefix + param);
    }
    *net->add_op() = collectives->shards.AllgatherBlocks(blocks, params);
    for (const std::string& param : bucket) {
      AppendAll(collectives->devices.Broadcast(param, cloner.RenameAll(param)), net);
    }
  }
  if (plan.loss_scaling.enabled) EmitLossScaleUpdate(plan, net);
}

}  // namespace

OperatorDef MakeOp(const std::string& type, const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs, const DeviceOption& device_option) {
  OperatorDef op;
  op.set_type(type);
  for (const std::string& input : inputs) op.add_input(input);
  for (const std::string& output : outputs) op.add_output(output);
  *op.mutable_device_option() = device_option;
  return op;
}

OperatorDef Int64Fill(const std::string& blob, int64_t value) {
  OperatorDef op = MakeOp("ConstantFill", {}, {blob}, DeviceOption());
  Argument* shape = op.add_arg();
  shape->set_name("shape");
  shape->add_ints(1);
  SetArgument(&op, "value", value);
  SetArgument(&op, "dtype", static_cast<int64_t>(TensorProto::INT64));
  return op;
}

void NameLoopBlobs(const std::vector<const NetDef*>& nets, OperatorDef* loop) {
  std::set<std::string> written;
  std::set<std::string> listed_inputs(loop->input().begin(), loop->input().end());
  for (const NetDef* net : nets) {
    for (const OperatorDef& op : net->op()) {
      for (const std::string& input : op.input()) {
        if (!written.count(input) && listed_inputs.insert(input).second) loop->add_input(input);
      }
      for (const std::string& output : op.output()) {
        if (written.insert(output).second) loop->add_output(output);
      }
    }
  }
}

NetDef ShardStateNet(const ParallelPlan& plan) {
  NetDef net;
  net.set_name("shard_optimizer_state");
  if (!plan.sharded.enabled) return net;
  const Replica& first = plan.replicas.front();
  for (const auto& entry : plan.sharded.state) {
    for (const std::string& blob : entry.second) {
      *net.add_op() = ShardSlice(first.prefix + blob, first.prefix + blob, plan.sharded,
                                 first.device_option);
    }
  }
  return net;
}

std::vector<Parallelized::ShardedBlob> ShardedBlobs(const ParallelPlan& plan) {
  std::vector<Parallelized::ShardedBlob> blobs;
  const ShardedState& sharded = plan.sharded;
  if (!sharded.enabled) return blobs;
  for (const auto& entry : sharded.state) {
    for (const std::string& blob : entry.second) {
      Parallelized::ShardedBlob described;
      described.blob = plan.replicas.front().prefix + blob;
      described.whole = plan.init_shapes.at(blob);
      int64_t elements = 1;
      for (int64_t dim : described.whole.dims()) elements *= dim;
      const ShardBlock block = BlockOfShard(elements, sharded.num_shards, sharded.shard_id);
      described.begin = block.begin;
      described.end = block.end;
      blobs.push_back(std::move(described));
    }
  }
  return blobs;
}

NetDef EmitTrainNet(const ParallelPlan& plan, const DataParallelTemplate& model,
                    const ParallelizeOptions& options) {
  const Cloner cloner(plan);
  NetCollectives collectives(plan, options);
  NetDef net = EmptyNetLike(model.net);
  // Op-major: op i on every replica before op i + 1, so the reductions after
  // op i precede every replica's later backward ops in the listed order
  // (the last layer's gradients are summed while the first layer's are
  // still computed), and every replica's statistics exist before any
  // replica's combined SpatialBN reads their sum.
  const std::vector<bool> shared_op =
      cloner.SharedOps(plan.train_ops, "net '" + model.net.name() + "'");
  if (plan.accumulate_steps > 1) {
    EmitAccumulatedStep(plan, model, options, cloner, shared_op, &collectives, &net);
  }
  for (size_t i = 0; plan.accumulate_steps == 1 && i < plan.train_ops.size(); ++i) {
    for (size_t r = 0; r < plan.replicas.size(); ++r) {
      cloner.Append(plan.train_ops[i], shared_op[i], /*master_only=*/false, r, &net);
    }
    auto after = plan.after_op.find(static_cast<int>(i));
    if (after != plan.after_op.end()) {
      EmitAfterOp(after->second, plan, options, cloner, &collectives, &net);
    }
  }
  if (plan.sharded.enabled) {
    EmitShardedUpdate(plan, model, options, cloner, &collectives, &net);
  } else if (plan.loss_scaling.enabled) {
    NetDef updates;
    updates.set_name(model.param_update_net.name() + "_if_finite");
    cloner.AppendReplicaMajor(OpsOf(plan.update_net),
                              "param_update_net '" + model.param_update_net.name() + "'",
                              std::vector<bool>(plan.update_net.op_size(), false), &updates);
    EmitUnscale(plan, &net);
    EmitGuardedUpdates(plan, options, std::move(updates), &net);
    EmitLossScaleUpdate(plan, &net);
  } else {
    // A shared model has one copy of each param to update: the master's.
    cloner.AppendReplicaMajor(OpsOf(plan.update_net),
                              "param_update_net '" + model.param_update_net.name() + "'",
                              std::vector<bool>(plan.update_net.op_size(), options.shared_model),
                              &net);
  }
  net.set_type(options.net_type);
  // Doppio's dag executor reads num_workers per device (each device has its
  // own pool), so this is Caffe2's total divided by the device count. An
  // argument: the NetDef field of that name is deprecated.
  SetArgument(&net, "num_workers", options.num_threads_per_device);
  SetExternalInputs(&net);
  SetExternalOutputs(model.net, cloner, &net);
  return net;
}

NetDef EmitInitNet(const ParallelPlan& plan, const DataParallelTemplate& model,
                   const ParallelizeOptions& options) {
  const Cloner cloner(plan);
  NetCollectives collectives(plan, options);
  NetDef init = EmptyNetLike(model.param_init_net);
  if (model.param_init_net.has_type()) init.set_type(model.param_init_net.type());
  cloner.AppendReplicaMajor(OpsOf(model.param_init_net),
                            "param_init_net '" + model.param_init_net.name() + "'",
                            plan.init_master_only, &init);
  // After the template's ops: one of them may make the store handler.
  if (plan.distributed) *init.add_op() = collectives.shards.CreateCommonWorld();
  for (const std::string& blob : plan.init_broadcasts) {
    const std::vector<std::string> copies = cloner.RenameAll(blob);
    // Across processes first, so the local copies get shard 0's value. A
    // shared model's params exist once per process: no local copies.
    if (plan.distributed) *init.add_op() = collectives.shards.Broadcast(copies.front());
    if (!plan.master_params.count(blob)) {
      AppendAll(collectives.devices.Broadcast(blob, copies), &init);
    }
  }
  AppendAll(OpsOf(ShardStateNet(plan)), &init);
  EmitLossScaleInit(plan, &init);
  SetExternalInputs(&init);
  SetExternalOutputs(model.param_init_net, cloner, &init);
  return init;
}

std::vector<std::map<std::string, std::string>> DeviceParamToGrad(
    const ParallelPlan& plan, const ParallelizeOptions& options) {
  std::vector<std::map<std::string, std::string>> maps;
  for (size_t r = 0; r < plan.replicas.size(); ++r) {
    std::map<std::string, std::string> device_map;
    if (!options.shared_model || r == 0) {
      const std::string& prefix = plan.replicas[r].prefix;
      for (const auto& entry : plan.param_to_grad) {
        device_map[prefix + entry.first] = prefix + entry.second;
      }
    }
    maps.push_back(std::move(device_map));
  }
  return maps;
}

}  // namespace doppio
