// The Parallelize pass's mixed-precision phases (data_parallel_phases.h):
// lowering the template's forward net, and dynamic loss scaling (its plan,
// the guarded update and the init of its blobs).
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/argument.h"
#include "core/enforce.h"
#include "parallel/data_parallel_phases.h"
#include "parallel/distributed.h"
#include "parallel/mixed_precision.h"

namespace doppio {
namespace {

// The index in train_ops of the op that makes `loss`'s gradient seed: the
// first backward op that fills a blob from the loss alone.
int SeedOpOf(const ParallelPlan& plan, const std::string& loss) {
  for (size_t i = plan.num_forward_ops; i < plan.train_ops.size(); ++i) {
    const OperatorDef& op = plan.train_ops[i];
    if (op.type() == "ConstantFill" && op.input_size() == 1 && op.input(0) == loss &&
        op.output_size() == 1) {
      return static_cast<int>(i);
    }
  }
  DOPPIO_NOT_IMPLEMENTED(
      "Parallelize: dynamic loss scaling cannot find the gradient of loss '", loss,
      "' (a ConstantFill from the loss); a loss given its own gradient blob is not supported");
}

void RefuseLossScalingWith(const ParallelizeOptions& options, const ParallelPlan& plan) {
  const char* refused = !plan.sparse_param_to_grad.empty() ? "sparse gradients"
                        : options.shared_model               ? "shared_model"
                        : options.local_updates              ? "local updates (BMUF)"
                                                             : nullptr;
  if (refused != nullptr) {
    DOPPIO_NOT_IMPLEMENTED("Parallelize: dynamic loss scaling with ", refused,
                                         " is not implemented yet");
  }
}

}  // namespace

DataParallelTemplate PlanPrecision(const DataParallelTemplate& model,
                                   const ParallelizeOptions& options, PrecisionPlan* precision) {
  const DataType low = ParsePrecision(options.precision);
  precision->low = low;
  if (low == DataType::kFloat) return model;
  LoweredNet result = LowerPrecision(model.net, low);
  if (model.backward) {
    // The caller derived the backward, so it must have lowered the forward
    // net first (lowering is idempotent: a lowered net gets no new casts).
    if (!result.plan.casts.empty()) {
      DOPPIO_THROW_ARG(
          "Parallelize: precision '", options.precision, "' with a template that carries its "
          "backward, but net '", model.net.name(), "' is not lowered (it would cast '",
          result.plan.casts.front().first, "'): lower the forward net (LowerPrecision) before "
          "deriving its gradients");
    }
    return model;
  }
  DataParallelTemplate lowered = model;
  lowered.net = std::move(result.net);
  *precision = std::move(result.plan);
  return lowered;
}

void PlanLossScaling(const DataParallelTemplate& model, const ParallelizeOptions& options,
                     ParallelPlan* plan) {
  const bool fp16 = ParsePrecision(options.precision) == DataType::kFloat16;
  plan->loss_scaling.enabled = options.dynamic_loss_scale.value_or(fp16);
  if (!plan->loss_scaling.enabled || model.losses.empty()) {
    plan->loss_scaling.enabled = false;
    return;
  }
  RefuseLossScalingWith(options, *plan);
  plan->loss_scaling.init_scale = options.init_loss_scale;
  plan->loss_scaling.growth_interval = options.loss_scale_growth_interval;
  const std::set<std::string> taken = TemplateBlobs(model, *plan);
  for (const char* name : {kLossScaleBlob, kLossScaleGoodStepsBlob, kLossScaleSkippedStepsBlob,
                           kGradientsFiniteBlob}) {
    if (taken.count(name)) {
      DOPPIO_THROW_ARG("Parallelize: blob '", name, "' already exists in "
                                            "the model; dynamic loss scaling needs that name");
    }
  }
  // Back to front, so the indices of the seeds not yet handled stay valid.
  std::vector<int> seeds;
  for (const std::string& loss : model.losses) seeds.push_back(SeedOpOf(*plan, loss));
  std::sort(seeds.rbegin(), seeds.rend());
  for (int seed : seeds) {
    const std::string& grad = plan->train_ops[seed].output(0);
    OperatorDef scale = MakeOp("Mul", {grad, kLossScaleBlob}, {grad},
                               plan->train_ops[seed].device_option());
    SetArgument(&scale, "broadcast", int64_t{1});
    plan->train_ops.insert(plan->train_ops.begin() + seed + 1, std::move(scale));
  }
}

namespace {

OperatorDef Not(const std::string& from, const std::string& to, const DeviceOption& device) {
  return MakeOp("Not", {from}, {to}, device);
}

OperatorDef CastTo(const std::string& from, const std::string& to, int64_t dtype,
                   const DeviceOption& device) {
  OperatorDef cast = MakeOp("Cast", {from}, {to}, device);
  SetArgument(&cast, "to", dtype);
  return cast;
}

}  // namespace

void EmitUnscale(const ParallelPlan& plan, NetDef* net) {
  for (const Replica& replica : plan.replicas) {
    std::vector<std::string> grads;
    for (const auto& entry : plan.param_to_grad) grads.push_back(replica.prefix + entry.second);
    std::vector<std::string> inputs = grads;
    inputs.push_back(replica.prefix + kLossScaleBlob);
    grads.push_back(replica.prefix + kGradientsFiniteBlob);
    *net->add_op() = MakeOp("UnscaleGradients", inputs, grads, replica.device_option);
  }
}

void EmitShardedUnscale(const ParallelPlan& plan, ShardCollectives* shards, NetDef* net) {
  const Replica& first = plan.replicas.front();
  const std::string& p = first.prefix;
  const DeviceOption& device = first.device_option;
  std::vector<std::string> blocks;
  for (const auto& entry : plan.sharded.grad_blocks) blocks.push_back(p + entry.second);
  std::vector<std::string> inputs = blocks;
  inputs.push_back(p + kLossScaleBlob);
  const std::string local = p + kGradientsFiniteBlob + "_in_shard";
  const std::string overflow = p + kGradientsFiniteBlob + "_overflow";
  const std::string overflows = p + kGradientsFiniteBlob + "_overflows";
  blocks.push_back(local);
  *net->add_op() = MakeOp("UnscaleGradients", inputs, blocks, device);
  // The shards that saw a non-finite block, summed over the shards.
  *net->add_op() = Not(local, overflow, device);
  *net->add_op() = CastTo(overflow, overflows, TensorProto::FLOAT, device);
  *net->add_op() = shards->Allreduce(overflows);
  *net->add_op() = CastTo(overflows, overflow, TensorProto::BOOL, device);
  *net->add_op() = Not(overflow, p + kGradientsFiniteBlob, device);
}

void EmitGuardedUpdates(const ParallelPlan& plan, const ParallelizeOptions& options,
                        NetDef updates, NetDef* net) {
  const Replica& first = plan.replicas.front();
  OperatorDef guarded = MakeOp("If", {first.prefix + kGradientsFiniteBlob}, {},
                               first.device_option);
  guarded.set_name(updates.name());
  updates.set_type(options.net_type);
  SetArgument(&updates, "num_workers", options.num_threads_per_device);
  Argument* then_net = guarded.add_arg();
  then_net->set_name("then_net");
  *then_net->mutable_n() = std::move(updates);
  NameLoopBlobs({&then_net->n()}, &guarded);
  *net->add_op() = std::move(guarded);
}

void EmitLossScaleUpdate(const ParallelPlan& plan, NetDef* net) {
  const std::string finite = plan.replicas.front().prefix + kGradientsFiniteBlob;
  for (const Replica& replica : plan.replicas) {
    const std::string& p = replica.prefix;
    OperatorDef update = MakeOp(
        "UpdateLossScale",
        {finite, p + kLossScaleBlob, p + kLossScaleGoodStepsBlob, p + kLossScaleSkippedStepsBlob},
        {p + kLossScaleBlob, p + kLossScaleGoodStepsBlob, p + kLossScaleSkippedStepsBlob},
        replica.device_option);
    SetArgument(&update, "growth_interval", plan.loss_scaling.growth_interval);
    *net->add_op() = std::move(update);
  }
}

void EmitLossScaleInit(const ParallelPlan& plan, NetDef* init) {
  if (!plan.loss_scaling.enabled) return;
  for (const Replica& replica : plan.replicas) {
    OperatorDef scale = MakeOp("ConstantFill", {}, {replica.prefix + kLossScaleBlob},
                               replica.device_option);
    Argument* shape = scale.add_arg();
    shape->set_name("shape");
    shape->add_ints(1);
    Argument* value = scale.add_arg();
    value->set_name("value");
    value->set_f(plan.loss_scaling.init_scale);
    *init->add_op() = std::move(scale);
    for (const char* counter : {kLossScaleGoodStepsBlob, kLossScaleSkippedStepsBlob}) {
      OperatorDef fill = Int64Fill(replica.prefix + counter, 0);
      *fill.mutable_device_option() = replica.device_option;
      *init->add_op() = std::move(fill);
    }
  }
}

}  // namespace doppio
