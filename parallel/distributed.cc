#include "parallel/distributed.h"

#include "core/enforce.h"

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
  DOPPIO_ENFORCE(!rendezvous.kv_handler.empty(),
                 "Parallelize: rendezvous needs kv_handler, the store handler blob "
                 "(FileStoreHandlerCreate / RedisStoreHandlerCreate) to rendezvous through");
  DOPPIO_ENFORCE(!rendezvous.common_world.empty(),
                 "Parallelize: rendezvous needs a common world blob name");
  DOPPIO_ENFORCE(rendezvous.shard_id >= 0 && rendezvous.shard_id < rendezvous.num_shards,
                 "Parallelize: rendezvous shard_id ", rendezvous.shard_id,
                 " is not in [0, num_shards = ", rendezvous.num_shards, ")");
  DOPPIO_ENFORCE(rendezvous.engine == "GLOO", "Parallelize: rendezvous engine '",
                 rendezvous.engine, "' is not supported; only 'GLOO'");
  DOPPIO_ENFORCE(rendezvous.timeout_ms > 0, "Parallelize: rendezvous timeout_ms must be "
                 "positive, got ", rendezvous.timeout_ms);
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
  previous_ = rendezvous_.common_world;
  return op;
}

OperatorDef ShardCollectives::Collective(const std::string& type, const std::string& name,
                                         const std::string& blob) {
  OperatorDef op;
  op.set_type(type);
  op.set_name(name);
  op.set_engine(rendezvous_.engine);
  op.add_input(rendezvous_.common_world);
  op.add_input(blob);
  op.add_output(blob);
  if (!previous_.empty() && previous_ != rendezvous_.common_world) {
    op.add_control_input(previous_);
  }
  *op.mutable_device_option() = device_option_;
  previous_ = blob;
  return op;
}

OperatorDef ShardCollectives::Allreduce(const std::string& blob) {
  return Collective("Allreduce", "allreduce_shards_" + blob, blob);
}

OperatorDef ShardCollectives::Broadcast(const std::string& blob) {
  OperatorDef op = Collective("Broadcast", "broadcast_shards_" + blob, blob);
  AddArg(&op, "root", 0);
  return op;
}

}  // namespace doppio
