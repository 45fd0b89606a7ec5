#include "parallel/sharded_state.h"

#include <utility>

#include "core/enforce.h"
#include "core/schema.h"

namespace doppio {
namespace {

int64_t Elements(const TensorShape& shape) {
  if (shape.unknown_shape() || shape.unknown_dims_size() > 0) return -1;
  int64_t n = 1;
  for (int64_t dim : shape.dims()) n *= dim;
  return n;
}

std::string Describe(const OperatorDef& op) {
  return MakeString("update op ", op.type(), op.name().empty() ? "" : " '" + op.name() + "'");
}

// Blob -> the param whose blocks it holds, grown until no update op adds one.
class Owners {
 public:
  explicit Owners(const ShardedStateInputs& inputs) : inputs_(inputs) {
    for (const auto& entry : *inputs.param_to_grad) {
      owner_[entry.first] = entry.first;
      owner_[entry.second] = entry.first;
    }
  }

  // The param whose blocks `op` touches, "" for none; two is an error.
  std::string OwnerOf(const OperatorDef& op) const {
    std::string found;
    for (const auto* names : {&op.input(), &op.output()}) {
      for (const std::string& name : *names) {
        auto owner = owner_.find(name);
        if (owner == owner_.end() || owner->second == found) continue;
        if (!found.empty()) {
          DOPPIO_NOT_IMPLEMENTED(
              "Parallelize: shard_optimizer_state: ", Describe(op), " updates both parameter '",
              found, "' and parameter '", owner->second, "'; each shard holds a different "
              "block of each, so an op may only combine one parameter's blobs");
        }
        found = owner->second;
      }
    }
    return found;
  }

  // Every op touching a param's blobs makes its outputs that param's.
  void Grow() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const OperatorDef& op : inputs_.update_net->op()) {
        const std::string param = OwnerOf(op);
        if (param.empty()) continue;
        for (const std::string& output : op.output()) {
          if (inputs_.shared->count(output)) {
            DOPPIO_NOT_IMPLEMENTED(
                "Parallelize: shard_optimizer_state: ", Describe(op), " writes shared blob '",
                output, "' from parameter '", param, "''s blobs, of which each shard holds "
                "only a block");
          }
          changed = owner_.emplace(output, param).second || changed;
        }
      }
    }
  }

  const std::map<std::string, std::string>& owners() const { return owner_; }

 private:
  const ShardedStateInputs& inputs_;
  std::map<std::string, std::string> owner_;
};

// The op may run on blocks: elementwise, and reading only blocks of its
// param and one-element blobs.
void CheckBlockOp(const OperatorDef& op, const std::string& param, const Owners& owners,
                  const ShardedStateInputs& inputs) {
  const OpSchema* schema = OpSchemaRegistry::Schema(op.type());
  if (schema == nullptr || !schema->elementwise()) {
    DOPPIO_NOT_IMPLEMENTED(
        "Parallelize: shard_optimizer_state: ", Describe(op), " reads parameter '", param,
        "''s blobs but is not elementwise (its schema does not say Elementwise), so it cannot "
        "run on one shard's block of them; leave shard_optimizer_state off for this model");
  }
  for (const std::string& input : op.input()) {
    if (owners.owners().count(input) || inputs.shared->count(input)) continue;
    auto shape = inputs.shapes->find(input);
    if (shape != inputs.shapes->end() && Elements(shape->second) == 1) continue;
    DOPPIO_NOT_IMPLEMENTED(
        "Parallelize: shard_optimizer_state: ", Describe(op), " combines parameter '", param,
        "''s blobs with '", input, "', which is neither derived from that parameter nor a "
        "one-element blob, so it has no block to match");
  }
}

// Blob -> the first of `ops` that names it (as an input or an output).
std::map<std::string, const OperatorDef*> FirstUsers(const std::vector<OperatorDef>& ops) {
  std::map<std::string, const OperatorDef*> users;
  for (const OperatorDef& op : ops) {
    for (const auto* names : {&op.input(), &op.output()}) {
      for (const std::string& name : *names) users.emplace(name, &op);
    }
  }
  return users;
}

void PlanStateOf(const std::string& param, const std::set<std::string>& blobs,
                 const ShardedStateInputs& inputs,
                 const std::map<std::string, const OperatorDef*>& train_users,
                 ShardedState* sharded) {
  const std::string& grad = inputs.param_to_grad->at(param);
  auto param_shape = inputs.init_shapes->find(param);
  const int64_t param_elements =
      param_shape == inputs.init_shapes->end() ? -1 : Elements(param_shape->second);
  std::vector<std::string>& state = sharded->state[param];
  for (const std::string& blob : blobs) {
    if (blob == param || blob == grad) continue;
    auto user = train_users.find(blob);
    if (user != train_users.end()) {
      DOPPIO_NOT_IMPLEMENTED(
          "Parallelize: shard_optimizer_state: blob '", blob, "', which the update ops "
          "derive from parameter '", param, "', is also used by op ", user->second->type(),
          " '", user->second->name(), "' of the training net, which would see only a block "
          "of it");
    }
    auto made = inputs.init_shapes->find(blob);
    if (made == inputs.init_shapes->end()) continue;  // a temporary of each step
    const int64_t elements = Elements(made->second);
    if (param_elements < 0 || elements != param_elements) {
      DOPPIO_NOT_IMPLEMENTED(
          "Parallelize: shard_optimizer_state: optimizer state '", blob, "' of parameter '",
          param, "' has ", elements < 0 ? std::string("an unknown number of") :
          std::to_string(elements), " elements, the parameter ",
          param_elements < 0 ? std::string("an unknown number") : std::to_string(param_elements),
          "; only state of the parameter's size is cut into blocks");
    }
    state.push_back(blob);
  }
}

std::string FreeBlockName(const std::string& blob, const ShardedStateInputs& inputs) {
  const std::string block = blob + "_shard";
  if (inputs.taken->count(block)) {
    DOPPIO_THROW_ARG(
        "Parallelize: blob '", block, "' already exists in the model; shard_optimizer_state "
        "needs that name for this shard's block of '", blob, "'");
  }
  return block;
}

}  // namespace

ShardedState PlanShardedState(const ShardedStateInputs& inputs, int num_shards, int shard_id) {
  ShardedState sharded;
  sharded.enabled = true;
  sharded.num_shards = num_shards;
  sharded.shard_id = shard_id;
  Owners owners(inputs);
  owners.Grow();
  for (int i = 0; i < inputs.update_net->op_size(); ++i) {
    const OperatorDef& op = inputs.update_net->op(i);
    const std::string param = owners.OwnerOf(op);
    if (param.empty()) continue;
    CheckBlockOp(op, param, owners, inputs);
    sharded.op_param[i] = param;
  }
  std::map<std::string, std::set<std::string>> blobs_of;
  for (const auto& entry : owners.owners()) blobs_of[entry.second].insert(entry.first);
  const std::map<std::string, const OperatorDef*> train_users = FirstUsers(*inputs.train_ops);
  for (const auto& entry : *inputs.param_to_grad) {
    PlanStateOf(entry.first, blobs_of[entry.first], inputs, train_users, &sharded);
    sharded.param_blocks[entry.first] = FreeBlockName(entry.first, inputs);
    sharded.grad_blocks[entry.second] = FreeBlockName(entry.second, inputs);
  }
  return sharded;
}

std::vector<std::vector<std::string>> ParamBuckets(
    const std::vector<std::vector<std::string>>& grad_buckets,
    const std::map<std::string, std::string>& param_to_grad) {
  std::map<std::string, std::string> grad_to_param;
  for (const auto& entry : param_to_grad) grad_to_param[entry.second] = entry.first;
  std::vector<std::vector<std::string>> buckets;
  for (const std::vector<std::string>& grads : grad_buckets) {
    std::vector<std::string> params;
    for (const std::string& grad : grads) params.push_back(grad_to_param.at(grad));
    buckets.push_back(std::move(params));
  }
  return buckets;
}

}  // namespace doppio
