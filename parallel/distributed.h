// Parallelize across processes ("shards"), as Caffe2's data_parallel_model
// does when given a rendezvous: every process runs the same Parallelize
// pass on its own local devices, and the pass adds Gloo collectives over
// one common world so the shards train as one synchronous model.
//
// Per param gradient, after every local device's backward: in-process
// Allreduce over the local devices, Gloo Allreduce of device 0's copy across
// the shards, in-process Broadcast of that sum back to the other local
// devices. The init net connects the world first, and after the params are
// made broadcasts shard 0's params (device 0's copy) to every shard, before
// the in-process Broadcast to the local devices.
//
// Gradients cross the shards in buckets, as in PyTorch DDP: consecutive
// gradients (in the order backward finishes them) are packed into one
// AllreduceCoalesced until a bucket holds bucket_cap_mb (the first one 1 MiB,
// so communication starts early in backward). Each collective costs a few
// round trips of latency whatever its size, so a dozen small gradients sent
// one by one mostly wait. A bucket goes out after the last backward op that
// touches any of its gradients.
//
// One common world carries every collective, so no two may run at once (a
// Gloo context is not re-entrant): each Gloo op takes a control input on
// the blob the previous one wrote, which chains them under the dag executor
// in the order they were emitted. That order is the same in every shard, so
// the shards meet in each collective. Caffe2 instead clones the world per
// concurrent op (max_concurrent_distributed_ops); the chain trades that
// overlap between collectives for having one world to connect and time out.
//
// On CUDA devices (Parallelize_GPU) the local sum lands on device 0 alone
// (NCCLReduce, or the Copy + Sum tree without NCCL), the Gloo Allreduce and
// Broadcast run on device 0's tensor (engine GLOO on CUDA, staged through
// pinned host memory: parallel/gloo/collectives_gpu.cc), and NCCLBroadcast
// or Copies hand the result to the other devices. CreateCommonWorld stays
// on the CPU, where its kernel is. Each gradient crosses the shards in an
// Allreduce of its own there (bucket_cap_mb does not apply): a bucket needs
// AllreduceCoalesced, which has no CUDA kernel yet, and the staged CUDA
// Allreduce sums all its inputs into one, so it cannot carry a bucket.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/doppio.pb.h"

namespace doppio {

// Caffe2's rendezvous dict; num_shards <= 1 means a single process and
// everything else is ignored.
struct RendezvousOptions {
  // A store handler blob (FileStoreHandlerCreate / RedisStoreHandlerCreate)
  // that a net the caller ran before the init net made.
  std::string kv_handler;
  int num_shards = 1;
  int shard_id = 0;
  // The common world the init net creates and every collective reads.
  std::string common_world = "data_parallel_model_common_world";
  std::string engine = "GLOO";
  std::string transport = "tcp";
  std::string interface;
  // Limit for the rendezvous and for each send / receive (CreateCommonWorld).
  int timeout_ms = 30000;
  // Gradient bucket size in MiB (PyTorch DDP's bucket_cap_mb); 0 sends each
  // gradient in an Allreduce of its own, as Caffe2 does.
  double bucket_cap_mb = 25;
};

// A gradient to sum across shards, in the order backward finishes them.
struct GradientToReduce {
  std::string name;
  // float32 elements, or -1 when the pass cannot tell (a param the init net
  // does not make with a "shape", or of another dtype): such a gradient
  // travels alone.
  int64_t elements = -1;
};

// Consecutive runs of `grads` per the bucket rule above; every gradient in
// exactly one bucket, order kept.
std::vector<std::vector<std::string>> PlanGradientBuckets(
    const std::vector<GradientToReduce>& grads, double bucket_cap_mb);

// Element counts of the float32 blobs of `shapes` whose dims are known, for
// PlanGradientBuckets.
std::map<std::string, int64_t> FloatElements(const std::map<std::string, TensorShape>& shapes);

// FloatElements of the shapes the ops' schemas infer through `init_net`
// (the params its fills make).
std::map<std::string, int64_t> InferredFloatElements(const NetDef& init_net);

bool IsDistributed(const RendezvousOptions& rendezvous);

// Throws doppio::Error for a missing kv_handler or common world name, a
// shard id outside [0, num_shards), an engine other than GLOO, or a
// non-positive timeout.
void ValidateRendezvous(const RendezvousOptions& rendezvous);

// Emits one net's cross-shard ops, chained (see above).
class ShardCollectives {
 public:
  explicit ShardCollectives(const RendezvousOptions& rendezvous,
                            const DeviceOption& device_option);

  OperatorDef CreateCommonWorld();
  // In place on `blob`: the sum over every shard's `blob`.
  OperatorDef Allreduce(const std::string& blob);
  // In place on each of `blobs` (one bucket): the sum over every shard's
  // namesake. One blob gives a plain Allreduce.
  OperatorDef AllreduceBucket(const std::vector<std::string>& blobs);
  // In place on `blob`: shard 0's value.
  OperatorDef Broadcast(const std::string& blob);
  // The sharded optimizer state's collectives (parallel/sharded_state.h):
  // blocks[i] = this shard's block of the sum of blobs[i]; then blobs[i]
  // assembled from every shard's blocks[i].
  OperatorDef ReduceScatterBlocks(const std::vector<std::string>& blobs,
                                  const std::vector<std::string>& blocks);
  OperatorDef AllgatherBlocks(const std::vector<std::string>& blocks,
                              const std::vector<std::string>& blobs);

 private:
  OperatorDef Collective(const std::string& type, const std::string& name,
                         const std::vector<std::string>& blobs);
  // `inputs` after the world, chained after the previous collective.
  OperatorDef Chained(const std::string& type, const std::string& name,
                      const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs);

  RendezvousOptions rendezvous_;
  DeviceOption device_option_;
  // What the previous collective of this net wrote; empty before the first.
  std::string previous_;
};

}  // namespace doppio
