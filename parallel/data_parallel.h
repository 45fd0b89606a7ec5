// The Parallelize pass: a model built once (the template) becomes a
// synchronous-SGD model replicated on N devices, as Caffe2's
// data_parallel_model does (docs/DESIGN.md section 1).
//
// The pass is a driver over named phases (parallel/data_parallel_phases.h):
// validate, plan (a ParallelPlan, parallel/data_parallel_plan.h: every
// reduction and broadcast, decided before any op is emitted), emit the
// training net, emit the init net.
//
// The pass is a pure NetDef -> NetDef function; the Python front end
// (doppio.data_parallel_model) and C++ callers share it. Replicas live on
// CPU devices (blob prefix "cpu_<id>/") or CUDA devices ("gpu_<id>/"); the
// collectives between them are parallel/device_collectives.h's.
//
// Shared blobs are exactly those listed in ParallelizeOptions::shared_blobs:
// they keep their names and every op writing only shared blobs is emitted
// once, not per device (the iteration counter is incremented once per step,
// the learning rate computed once). Every other blob is per device.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/backward.h"
#include "core/gradient.h"
#include "parallel/data_parallel_plan.h"
#include "parallel/distributed.h"
#include "proto/doppio.pb.h"

namespace doppio {

// What the user's builders produced for ONE replica, without name scope.
struct DataParallelTemplate {
  NetDef param_init_net;
  // Input and forward ops; the losses are already scaled by the caller
  // (loss_scale = 1 / number of devices).
  NetDef net;
  std::vector<std::string> losses;
  std::vector<std::string> params;
  // Blobs the net updates itself (batch-norm running statistics).
  std::vector<std::string> computed_params;
  // Ops run after the gradients are reduced, written with the template's
  // param and gradient names.
  NetDef param_update_net;
  // The backward pass of `net` for `losses` (its gradient ops, and at least
  // every param's gradient), when the caller already ran it: the Python
  // front end does, so the update builders can name the gradients. Unset,
  // the pass runs AddGradientOperators itself. Either way it runs once.
  std::optional<BackwardResult> backward;
};

struct ParallelizeOptions {
  std::vector<int> devices;
  // DeviceType of the replicas: CPU or CUDA.
  int device_type = CPU;
  // CUDA devices: sum gradients with NCCLAllreduce and broadcast the init
  // params with NCCLBroadcast, instead of Copy + Sum trees and Copies.
  bool use_nccl = false;
  bool broadcast_computed_params = true;
  std::string net_type = "dag";
  int num_threads_per_device = 1;
  std::vector<std::string> shared_blobs;
  // Training SpatialBN normalizes over all devices' batches together
  // (parallel/combine_spatial_bn.h), as Caffe2's option of that name.
  bool combine_spatial_bn = false;
  // CPU only, as in Caffe2: every device reads the master's (devices[0])
  // params, the update ops run once for the master, the init net makes only
  // the master's params and no param Broadcast (parallel/shared_model.h).
  bool shared_model = false;
  // Each replica updates its own params from its own gradients: no gradient
  // is reduced across replicas or shards (the init broadcast still makes
  // them start equal). What Caffe2's Parallelize_BMUF builds its local
  // steps from; its block update averages the params every few steps.
  bool local_updates = false;
  // Gradient accumulation: each run of the training net reads
  // accumulate_steps micro-batches (forward and backward that many times),
  // sums their gradients and reduces and updates once, as one batch
  // accumulate_steps times larger would (the caller divides the loss scale
  // by it too). Blobs fed from outside the nets are cut into that many
  // micro-batches instead (ParallelPlan::fed_inputs). Not with sparse
  // gradients or shared_model.
  int accumulate_steps = 1;
  // ZeRO stage 1 across the processes of a rendezvous (parallel/
  // sharded_state.h): gradients are reduce-scattered, each process updates
  // and keeps only its block of each param's optimizer state, and the
  // params are allgathered. The training result is the unsharded one's up
  // to float rounding; optimizer memory per process falls by num_shards.
  // CPU devices only; nothing changes with one process.
  bool shard_optimizer_state = false;
  // Mixed precision (parallel/mixed_precision.h): "fp32" (none), "bf16" or
  // "fp16". The template's forward net runs its compute-bound ops in the low
  // type, params stay float32 masters. When the template carries its own
  // backward, the caller lowered the forward net before deriving it (the
  // Python front end does, with the same LowerPrecision). CPU devices only.
  std::string precision = "fp32";
  // Dynamic loss scaling: each loss's gradient starts at the loss scale,
  // the reduced gradients are unscaled, and a step whose gradients are not
  // all finite skips every update op (on every replica and process alike,
  // since all read the same reduced gradients) and halves the scale; after
  // loss_scale_growth_interval good steps in a row it doubles. Unset: on
  // for fp16, off otherwise. The scale and the skipped steps are per-replica
  // blobs: kLossScaleBlob, kLossScaleSkippedStepsBlob (data_parallel_plan.h).
  // With shard_optimizer_state each process checks its gradient blocks and
  // the processes' verdicts are summed. Not with sparse gradients,
  // shared_model or local_updates (NotImplementedError).
  std::optional<bool> dynamic_loss_scale;
  float init_loss_scale = 65536.0f;
  int64_t loss_scale_growth_interval = 2000;
  // num_shards > 1: this process is one shard of a multi-process run
  // (parallel/distributed.h); devices are this process's own.
  RendezvousOptions rendezvous;
};

// Everything Parallelize takes, as one value: the typed request of the
// Python front end (python_api/parallelize_py.cc).
struct ParallelizeRequest {
  DataParallelTemplate model;
  ParallelizeOptions options;
};

struct Parallelized {
  NetDef param_init_net;
  NetDef net;
  // Template param -> its (dense) gradient, for params the losses reach.
  std::map<std::string, std::string> param_to_grad;
  // Template param -> its sparse gradient as the update ops read it: with
  // several devices the all-devices concatenation (sparse_gradients.h),
  // with one the slice backward produced.
  std::map<std::string, GradientWrapper> sparse_param_to_grad;
  // One map per entry of ParallelizeOptions::devices, in that order:
  // device-prefixed param -> device-prefixed gradient. With shared_model
  // only the master's map has entries: the other devices own no params.
  std::vector<std::map<std::string, std::string>> device_param_to_grad;
  // Several processes: the dtypes and shapes the schedule check describes
  // collectives' blobs with (ReplicaBlobShapes), for a front end that adds
  // collectives later and checks again (InsertScheduleCheck).
  std::map<std::string, TensorShape> schedule_shapes;
  // shard_optimizer_state: this process's blocks of the optimizer state (on
  // the first device), each as the whole blob's shape and the elements
  // [begin, end) of it the block holds: what a sharded checkpoint saves as
  // segments of the whole (Save's `segments`).
  struct ShardedBlob {
    std::string blob;
    TensorShape whole;
    int64_t begin = 0;
    int64_t end = 0;
  };
  std::vector<ShardedBlob> sharded_blobs;
  // The ShardSlice ops that cut whole optimizer state into these blocks, in
  // place; the init net ends with them. Run after loading whole state (a
  // checkpoint of any process count) into the first device.
  NetDef shard_state_net;
  // What the pass decided: replicas and their prefixes, shared blobs, each
  // reduction and where it runs, the init broadcasts. ToString() prints it.
  ParallelPlan plan;
};

// "cpu_3/" for CPU device 3, "gpu_3/" for CUDA device 3. Throws
// InvalidArgumentError for other device types.
std::string DevicePrefix(int device_type, int device_id);

// The DevicePrefix of some device of `device_type` that `name` starts with
// ("cpu_12/" for "cpu_12/fc_w"), or "" when it has none.
std::string DevicePrefixOf(int device_type, const std::string& name);

// The pass. Gradient ops come from the gradient registry (core/backward.h);
// each param gradient gets summed over the devices (none for a single
// device: one `Allreduce` on CPU, NCCLAllreduce or a Copy + Sum tree on GPU,
// see device_collectives.h), placed after the last device's last op
// touching it so the dag executor overlaps it with the rest of backward;
// the init net ends with a broadcast of device 0's copy (`Broadcast` root 0
// on CPU, NCCLBroadcast or Copies on GPU) per param, and per computed param
// when broadcast_computed_params, so all replicas start identical.
//
// A sparse (GradientSlice) param gradient is not allreduced: every device
// ends up with the concatenation of all devices' slices, which the update
// ops read (sparse_gradients.h; on CUDA gathered on device 0 and copied
// out, DeviceCollectives::GatherRows).
//
// With a rendezvous of several shards the gradients are also allreduced and
// the init params broadcast across processes (parallel/distributed.h, which
// also says how CUDA devices do it); sparse gradients are refused there.
//
// Throws doppio::Error for: no or duplicate devices, a device type other
// than CPU and CUDA and shared_model with CUDA (InvalidArgumentError),
// sparse gradients with a rendezvous (NotImplementedError), a loss no op of the template net produces, update ops without
// losses, an op writing both shared and per-device blobs (or a shared blob
// from per-device inputs), and a concatenated-slice (or, on CUDA, staged
// copy) name the model already uses.
Parallelized Parallelize(const DataParallelTemplate& model,
                         const ParallelizeOptions& options);

}  // namespace doppio
