#include "parallel/distributed.h"

#include <algorithm>

#include "core/enforce.h"
#include "core/shape_walk.h"

namespace doppio {
namespace {

void AddArg(OperatorDef* op, const std::string& name, int value) {
  Argument* arg = op->add_arg();
  arg->set_name(name);
  arg->set_i(value);
}

void AddArg(OperatorDef* op, const std::string& name, const std::string& value) {
  Argument* arg = op->add_arg();
  arg->set_name(name);
  arg->set_s(value);
}

}  // namespace

bool IsDistributed(const RendezvousOptions& rendezvous) { return rendezvous.num_shards > 1; }

void ValidateRendezvous(const RendezvousOptions& rendezvous) {
  if (!IsDistributed(rendezvous)) return;
  DOPPIO_ENFORCE_ARG(!rendezvous.kv_handler.empty(),
                     "Parallelize: rendezvous needs kv_handler, the store handler blob "
                     "(FileStoreHandlerCreate / RedisStoreHandlerCreate) to rendezvous through");
  DOPPIO_ENFORCE_ARG(!rendezvous.common_world.empty(),
                     "Parallelize: rendezvous needs a common world blob name");
  DOPPIO_ENFORCE_ARG(rendezvous.shard_id >= 0 && rendezvous.shard_id < rendezvous.num_shards,
                     "Parallelize: rendezvous shard_id ", rendezvous.shard_id,
                     " is not in [0, num_shards = ", rendezvous.num_shards, ")");
  DOPPIO_ENFORCE_SUPPORTED(rendezvous.engine == "GLOO", "Parallelize: rendezvous engine '",
                           rendezvous.engine, "' is not supported: only 'GLOO' is built");
  DOPPIO_ENFORCE_SUPPORTED(rendezvous.transport == "tcp", "Parallelize: rendezvous transport '",
                           rendezvous.transport, "' is not supported: only 'tcp' is built");
  DOPPIO_ENFORCE_ARG(rendezvous.timeout_ms > 0,
                     "Parallelize: rendezvous timeout_ms must be positive, got ",
                     rendezvous.timeout_ms);
  DOPPIO_ENFORCE_ARG(rendezvous.bucket_cap_mb >= 0,
                     "Parallelize: rendezvous bucket_cap_mb must be >= 0 (0: one allreduce per "
                     "gradient), got ", rendezvous.bucket_cap_mb);
}

std::vector<std::vector<std::string>> PlanGradientBuckets(
    const std::vector<GradientToReduce>& grads, double bucket_cap_mb) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kFirstBucketBytes = 1.0 * kMiB;  // DDP's first bucket
  const double cap_bytes = bucket_cap_mb * kMiB;
  std::vector<std::vector<std::string>> buckets;
  std::vector<std::string> current;
  double current_bytes = 0;
  auto close = [&] {
    if (!current.empty()) buckets.push_back(std::move(current));
    current.clear();
    current_bytes = 0;
  };
  for (const GradientToReduce& grad : grads) {
    if (cap_bytes <= 0 || grad.elements < 0) {
      close();
      buckets.push_back({grad.name});
      continue;
    }
    current.push_back(grad.name);
    current_bytes += static_cast<double>(grad.elements) * sizeof(float);
    const double limit = buckets.empty() ? std::min(kFirstBucketBytes, cap_bytes) : cap_bytes;
    if (current_bytes >= limit) close();
  }
  close();
  return buckets;
}

std::map<std::string, int64_t> FloatElements(const std::map<std::string, TensorShape>& shapes) {
  std::map<std::string, int64_t> elements;
  for (const auto& entry : shapes) {
    const TensorShape& shape = entry.second;
    if (shape.unknown_shape() || shape.unknown_dims_size() > 0 ||
        shape.data_type() != TensorProto::FLOAT) {
      continue;
    }
    int64_t count = 1;
    for (int64_t dim : shape.dims()) count *= dim;
    elements[entry.first] = count;
  }
  return elements;
}

std::map<std::string, int64_t> InferredFloatElements(const NetDef& init_net) {
  return FloatElements(InferNetShapes(init_net, {}));
}

ShardCollectives::ShardCollectives(const RendezvousOptions& rendezvous,
                                   const DeviceOption& device_option)
    : rendezvous_(rendezvous), device_option_(device_option) {}

OperatorDef ShardCollectives::CreateCommonWorld() {
  OperatorDef op;
  op.set_type("CreateCommonWorld");
  // The op's name keys the world in the store (parallel/gloo).
  op.set_name(rendezvous_.common_world);
  op.add_input(rendezvous_.kv_handler);
  op.add_output(rendezvous_.common_world);
  AddArg(&op, "size", rendezvous_.num_shards);
  AddArg(&op, "rank", rendezvous_.shard_id);
  AddArg(&op, "transport", rendezvous_.transport);
  AddArg(&op, "interface", rendezvous_.interface);
  AddArg(&op, "timeout_ms", rendezvous_.timeout_ms);
  *op.mutable_device_option() = device_option_;
  // The world is a host object with a CPU kernel only; the CUDA collectives
  // read it from there.
  if (device_option_.device_type() != CPU) *op.mutable_device_option() = DeviceOption();
  previous_ = rendezvous_.common_world;
  return op;
}

OperatorDef ShardCollectives::Chained(const std::string& type, const std::string& name,
                                      const std::vector<std::string>& inputs,
                                      const std::vector<std::string>& outputs) {
  OperatorDef op;
  op.set_type(type);
  op.set_name(name);
  op.set_engine(rendezvous_.engine);
  op.add_input(rendezvous_.common_world);
  for (const std::string& blob : inputs) op.add_input(blob);
  for (const std::string& blob : outputs) op.add_output(blob);
  if (!previous_.empty() && previous_ != rendezvous_.common_world) {
    op.add_control_input(previous_);
  }
  *op.mutable_device_option() = device_option_;
  previous_ = outputs.back();
  return op;
}

OperatorDef ShardCollectives::Collective(const std::string& type, const std::string& name,
                                         const std::vector<std::string>& blobs) {
  return Chained(type, name, blobs, blobs);
}

OperatorDef ShardCollectives::Allreduce(const std::string& blob) {
  return Collective("Allreduce", "allreduce_shards_" + blob, {blob});
}

OperatorDef ShardCollectives::AllreduceBucket(const std::vector<std::string>& blobs) {
  DOPPIO_ENFORCE(!blobs.empty(), "Parallelize: an empty gradient bucket");
  if (blobs.size() == 1) return Allreduce(blobs.front());
  return Collective("AllreduceCoalesced",
                    "allreduce_shards_bucket_" + blobs.front() + "_to_" + blobs.back(), blobs);
}

OperatorDef ShardCollectives::Broadcast(const std::string& blob) {
  OperatorDef op = Collective("Broadcast", "broadcast_shards_" + blob, {blob});
  AddArg(&op, "root", 0);
  return op;
}

OperatorDef ShardCollectives::ReduceScatterBlocks(const std::vector<std::string>& blobs,
                                                  const std::vector<std::string>& blocks) {
  DOPPIO_ENFORCE(!blobs.empty() && blobs.size() == blocks.size(),
                 "Parallelize: a reduce-scatter bucket needs one block per gradient");
  return Chained("ReduceScatterBlocks",
                 "reduce_scatter_shards_" + blobs.front() +
                     (blobs.size() > 1 ? "_to_" + blobs.back() : std::string()),
                 blobs, blocks);
}

OperatorDef ShardCollectives::AllgatherBlocks(const std::vector<std::string>& blocks,
                                              const std::vector<std::string>& blobs) {
  DOPPIO_ENFORCE(!blobs.empty() && blobs.size() == blocks.size(),
                 "Parallelize: an allgather bucket needs one block per parameter");
  std::vector<std::string> inputs = blocks;
  inputs.insert(inputs.end(), blobs.begin(), blobs.end());
  return Chained("AllgatherBlocks",
                 "allgather_shards_" + blobs.front() +
                     (blobs.size() > 1 ? "_to_" + blobs.back() : std::string()),
                 inputs, blobs);
}

}  // namespace doppio
