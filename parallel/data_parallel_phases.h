// The phases of the Parallelize pass (parallel/data_parallel.h), each a pure
// function with its own test (tests/parallel/data_parallel_phases_test.cc).
// Parallelize is: Validate, PlanParallelize, EmitTrainNet, EmitInitNet,
// AddScheduleCheck.
//
// Planning (data_parallel_planning.cc) fills a ParallelPlan step by step;
// every step reads the template and options and what earlier steps planned.
// Emitting (data_parallel_emit.cc) only turns a plan into ops.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "parallel/data_parallel.h"
#include "parallel/data_parallel_plan.h"

namespace doppio {

// "'a', 'b', 'c'": how the pass's errors list blob and param names.
std::string QuotedNames(const std::vector<std::string>& names);

// Refuses bad options: devices, device type, threads, shared_model off CPU,
// the rendezvous. Throws doppio::Error (InvalidArgumentError or
// NotImplementedError where the caller can tell which).
void ValidateParallelizeOptions(const ParallelizeOptions& options);

// The options, and a template whose losses no op produces or that has
// update ops but no losses.
void ValidateParallelize(const DataParallelTemplate& model, const ParallelizeOptions& options);

// ---- plan ----

// Every blob the template's nets name and the training ops write: what a
// name the pass adds must not be.
std::set<std::string> TemplateBlobs(const DataParallelTemplate& model, const ParallelPlan& plan);

// Mixed precision: the template with its forward net lowered to
// options.precision (parallel/mixed_precision.h); what was done goes to
// `precision`. A template that carries its own backward must come lowered
// (the Python front end lowers before deriving it): InvalidArgumentError
// otherwise.
DataParallelTemplate PlanPrecision(const DataParallelTemplate& model,
                                   const ParallelizeOptions& options, PrecisionPlan* precision);

// Dynamic loss scaling (options.dynamic_loss_scale, by default on for fp16):
// each loss's gradient seed is multiplied by the replica's kLossScaleBlob
// right after the ConstantFill that makes it. Right after PlanGradients, so
// later phases index the final train_ops. NotImplementedError with sparse
// gradients, shared_model or local_updates; InvalidArgumentError when the
// scale's blob names are taken.
void PlanLossScaling(const DataParallelTemplate& model, const ParallelizeOptions& options,
                     ParallelPlan* plan);

// The replicas, in options.devices order.
std::vector<Replica> PlanReplicas(const ParallelizeOptions& options);

// The template's params that no loss depends on through the forward ops
// (by data flow; a path through StopGradient counts), in params order.
std::vector<std::string> ParamsNoLossDependsOn(const DataParallelTemplate& model);

// train_ops = forward + backward (the template's own backward when it
// carries one, else AddGradientOperators over the losses), and the params'
// dense and sparse gradients. Params the losses do not reach get none;
// params no loss depends on at all are refused (InvalidArgumentError naming
// them), frozen ones (behind StopGradient) are left out.
void PlanGradients(const DataParallelTemplate& model, ParallelPlan* plan);

// Shared blobs, the shared model's master params, and the checks that
// params and their gradients are per device.
void PlanSharing(const DataParallelTemplate& model, const ParallelizeOptions& options,
                 ParallelPlan* plan);

// combine_spatial_bn over several replicas: rewrites train_ops and plans
// the statistics sums.
void PlanCombinedBatchNorm(const ParallelizeOptions& options, ParallelPlan* plan);

// Sparse gradients over several replicas: their concatenated names, the
// update ops rewritten to read them, and where each concatenation goes.
// Refuses sparse gradients across shards.
void PlanSparseGradients(const DataParallelTemplate& model, const ParallelizeOptions& options,
                         ParallelPlan* plan);

// The blobs of the micro-step loop (accumulate_steps > 1): its int64
// counter, its limit and its condition.
constexpr const char* kAccumulateStepBlob = "__accumulate_step";
constexpr const char* kAccumulateLimitBlob = "__accumulate_steps";
constexpr const char* kAccumulateMoreBlob = "__accumulate_more";
// Appended to a fed input's name for the whole batch of the step.
constexpr const char* kFedBatchSuffix = "_fed_batch";

// accumulate_steps > 1: each dense gradient's accumulator (a free name; the
// loop's blob names must be free too) and the fed inputs cut into
// micro-batches. Refuses sparse gradients and shared_model
// (NotImplementedError).
void PlanAccumulation(const DataParallelTemplate& model, const ParallelizeOptions& options,
                      ParallelPlan* plan);

// The blobs the template's net reads before any of its ops writes them that
// neither the init net nor the params provide, nor are shared: what a user
// feeds per step (FeedBlob), in the order first read.
std::vector<std::string> FedInputs(const DataParallelTemplate& model, const ParallelPlan& plan);

// Dense gradient sums: each after the last op touching the gradient, in
// the reverse order of the params' first forward use (the first layer's
// gradient finishes last); across shards, in buckets. None with
// local_updates.
void PlanDenseReductions(const DataParallelTemplate& model, const ParallelizeOptions& options,
                         ParallelPlan* plan);

// shard_optimizer_state across processes: which update ops run on blocks,
// each param's optimizer state, the block names and the params' allgather
// buckets (parallel/sharded_state.h). After PlanDenseReductions, whose
// buckets it follows.
void PlanShardedOptimizer(const DataParallelTemplate& model, const ParallelizeOptions& options,
                          ParallelPlan* plan);

// The init net's master-only ops (a shared model's, the sharded optimizer
// state's) and the blobs it broadcasts.
void PlanInit(const DataParallelTemplate& model, const ParallelizeOptions& options,
              ParallelPlan* plan);

// All of the above, in order.
ParallelPlan PlanParallelize(const DataParallelTemplate& model,
                             const ParallelizeOptions& options);

// ---- emit ----

// Forward + backward per replica (op-major, so each reduction can follow
// the op that enables it), the planned reductions, then the update ops.
NetDef EmitTrainNet(const ParallelPlan& plan, const DataParallelTemplate& model,
                    const ParallelizeOptions& options);

// The template's init ops per replica, then (distributed) the common world,
// then the planned broadcasts.
NetDef EmitInitNet(const ParallelPlan& plan, const DataParallelTemplate& model,
                   const ParallelizeOptions& options);

// shard_optimizer_state: the ShardSlice ops cutting each optimizer state
// blob of the first replica to this shard's block, in place (the init net
// ends with them), and the blocks they make. Empty without sharding.
NetDef ShardStateNet(const ParallelPlan& plan);
std::vector<Parallelized::ShardedBlob> ShardedBlobs(const ParallelPlan& plan);

// Loss scaling, after the reductions. Unscale: per replica,
// UnscaleGradients over its reduced dense gradients (all replicas of all
// processes reach the same verdict). ShardedUnscale (shard_optimizer_state):
// the first replica unscales its gradient blocks, and the shards' verdicts
// are combined by an Allreduce of their overflow counts. GuardedUpdates:
// `updates` (every replica's update ops) inside an If on the first
// replica's verdict. LossScaleUpdate: per replica, UpdateLossScale on it.
void EmitUnscale(const ParallelPlan& plan, NetDef* net);
void EmitShardedUnscale(const ParallelPlan& plan, ShardCollectives* shards, NetDef* net);
void EmitGuardedUpdates(const ParallelPlan& plan, const ParallelizeOptions& options,
                        NetDef updates, NetDef* net);
void EmitLossScaleUpdate(const ParallelPlan& plan, NetDef* net);
// Loss scaling: each replica's scale, good and skipped steps, made by the
// init net.
void EmitLossScaleInit(const ParallelPlan& plan, NetDef* init);

// An op of `type` over these blobs, and a one-element int64 ConstantFill
// (on the CPU), as the emitting phases build them.
OperatorDef MakeOp(const std::string& type, const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs, const DeviceOption& device_option);
OperatorDef Int64Fill(const std::string& blob, int64_t value);

// The blobs nested nets (condition first, then body) read before writing
// and the blobs they write, added to `op`'s inputs and outputs, so passes and
// executors that see only the blobs an op names (the dag executor's
// dependencies, the Free ops of dynamic memory management) see its nets'.
void NameLoopBlobs(const std::vector<const NetDef*>& nets, OperatorDef* op);

// ---- check ----

// The dtype and shape of every replica's (prefixed) params, the other blobs
// the init net makes, and the params' dense gradients: plan.init_shapes
// under the replicas' names.
std::map<std::string, TensorShape> ReplicaBlobShapes(const ParallelPlan& plan);

// Several processes: a VerifyCollectiveSchedule right after the init net's
// CreateCommonWorld, carrying the schedule of every collective after it in
// `init` and then in `net` (parallel/collective_schedule.h), their blobs
// described by `shapes` (ReplicaBlobShapes). Nothing for one process.
void AddScheduleCheck(const ParallelPlan& plan, const ParallelizeOptions& options,
                      const std::map<std::string, TensorShape>& shapes, const NetDef& net,
                      NetDef* init);

// Per replica: prefixed param -> prefixed dense gradient (empty for the
// replicas of a shared model that own no params).
std::vector<std::map<std::string, std::string>> DeviceParamToGrad(
    const ParallelPlan& plan, const ParallelizeOptions& options);

}  // namespace doppio
