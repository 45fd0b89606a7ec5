// The Parallelize pass's plan: everything the pass decides before it emits
// an op, as one value that can be printed and tested on its own.
//
// The pass (parallel/data_parallel.h) is three phases: plan (this value,
// made by PlanParallelize in data_parallel_phases.h), emit the training net,
// emit the init net. Every name in the plan is a TEMPLATE name (no device
// prefix); the emitters add the prefixes of `replicas`.
//
// Ownership: a plain value; copying it copies everything. Not thread-safe
// to mutate, safe to read from several threads.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "parallel/mixed_precision.h"
#include "parallel/sharded_state.h"
#include "parallel/sparse_gradients.h"
#include "proto/doppio.pb.h"

namespace doppio {

// One replica of the model: its blob prefix ("cpu_1/") and device.
struct Replica {
  std::string prefix;
  DeviceOption device_option;
};

// What the training net gets right after the LAST replica's copy of one
// template op: by then every replica has produced the blobs named here.
// Emitted in this order: statistics, gradients, shard buckets, sparse.
struct AfterOp {
  // Combined SpatialBN statistics, summed over the replicas.
  std::vector<std::string> statistics;
  // Dense gradients summed over the replicas; with several shards the sum
  // lands on the first replica only, for the shard buckets to carry on.
  std::vector<std::string> gradients;
  // Gradient buckets summed across the shards (one AllreduceCoalesced each)
  // and then handed from the first replica to the others; with the sharded
  // optimizer state, reduce-scattered into the first replica's blocks.
  std::vector<std::vector<std::string>> shard_buckets;
  // Sparse gradients whose slices are concatenated over the replicas.
  std::vector<SparseGradientSync> sparse;

  bool empty() const {
    return statistics.empty() && gradients.empty() && shard_buckets.empty() && sparse.empty();
  }
};

// Dynamic loss scaling's per-replica blobs: the scale (float32), the good
// steps since it last changed and the skipped steps (int64), and whether
// this step's reduced gradients are all finite (bool).
constexpr const char* kLossScaleBlob = "loss_scale";
constexpr const char* kLossScaleGoodStepsBlob = "loss_scale_good_steps";
constexpr const char* kLossScaleSkippedStepsBlob = "loss_scale_skipped_steps";
constexpr const char* kGradientsFiniteBlob = "loss_scale_gradients_finite";

struct ParallelPlan {
  std::vector<Replica> replicas;
  // Blobs that exist once, unprefixed (the iteration counter, the lr).
  std::set<std::string> shared;
  // With shared_model: the params only the first replica holds.
  std::set<std::string> master_params;
  // Several processes over a rendezvous.
  bool distributed = false;
  // Micro-batches per step. Above 1 the training net runs the forward and
  // backward ops in a While loop this many times (the same op instances
  // every time, so a reader hands out consecutive batches and a stateful op
  // keeps its state), adding each micro-batch's gradients into
  // accumulators; after the loop the gradients are the sums and the
  // reductions and updates run once. The after_op statistics are summed in
  // every micro-step, the rest after the loop.
  int accumulate_steps = 1;
  // Each replica updates its own params; no gradient is reduced.
  bool local_updates = false;
  // shard_optimizer_state across processes: the update ops on blocks.
  ShardedState sharded;
  // Dense gradient -> the blob its micro-batch sum is kept in.
  std::map<std::string, std::string> accumulators;
  // accumulate_steps > 1: the blobs the template's net reads but nothing
  // makes (batches fed from Python), in the order first read. Each is kept
  // for the step under `<name>_fed_batch` and every micro-step reads its
  // rows of it (MicroBatchSlice), so K micro-steps cover the fed batch once;
  // after the loop the blob is the whole batch again.
  std::vector<std::string> fed_inputs;
  // The dtype and shape of the blobs the template's init net makes (the
  // params among them), as the ops' schemas infer them: what bucket sizes,
  // accumulators and the collective schedule check read.
  std::map<std::string, TensorShape> init_shapes;
  // options.precision: what LowerPrecision did to the template's forward
  // net (the template the rest of the plan reads is the lowered one).
  PrecisionPlan precision;
  // Dynamic loss scaling (options.dynamic_loss_scale): the scale starts at
  // init_scale and grows after growth_interval good steps.
  struct LossScaling {
    bool enabled = false;
    float init_scale = 65536.0f;
    int64_t growth_interval = 2000;
  } loss_scaling;

  // Forward then backward ops of the training net, after the
  // combine_spatial_bn rewrite; indices below refer to this list.
  std::vector<OperatorDef> train_ops;
  // How many of train_ops are the template's forward ops.
  int num_forward_ops = 0;
  // The update ops, reading the concatenated slices of sparse gradients.
  NetDef update_net;
  // Param -> dense gradient, for params the losses reach.
  std::map<std::string, std::string> param_to_grad;
  // Param -> the sparse gradient its update ops read.
  std::map<std::string, GradientWrapper> sparse_param_to_grad;
  // Index into train_ops -> what follows that op's last replica.
  std::map<int, AfterOp> after_op;

  // One flag per param_init_net op: run by the first replica alone.
  std::vector<bool> init_master_only;
  // Blobs whose first-replica value the init net hands to every replica
  // (and, distributed, shard 0's value to every shard), in this order.
  std::vector<std::string> init_broadcasts;

  // A readable account: replicas, shared blobs, each reduction after the op
  // that enables it, the init broadcasts.
  std::string ToString() const;
};

}  // namespace doppio
