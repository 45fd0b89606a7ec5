#include "parallel/sparse_gradients.h"

#include "core/enforce.h"

namespace doppio {
namespace {

OperatorDef ConcatAlongRows(const std::vector<std::string>& inputs, const std::string& output,
                            const DeviceOption& device_option) {
  OperatorDef op;
  op.set_type("Concat");
  op.set_name("all_devices_concat_" + output);
  for (const std::string& input : inputs) op.add_input(input);
  op.add_output(output);
  op.add_output(output + "_split");
  Argument* axis = op.add_arg();
  axis->set_name("axis");
  axis->set_i(0);
  *op.mutable_device_option() = device_option;
  return op;
}

// The sync whose slice owns `blob` as its values (or, failing that, as its
// indices when only one slice uses those indices); nullptr when none.
const SparseGradientSync* OwnerOf(const std::vector<SparseGradientSync>& syncs,
                                  const OperatorDef& op) {
  auto names = [&op](const std::string& blob) {
    for (const std::string& input : op.input()) {
      if (input == blob) return true;
    }
    for (const std::string& output : op.output()) {
      if (output == blob) return true;
    }
    return false;
  };
  for (const SparseGradientSync& sync : syncs) {
    if (names(sync.slice.values)) return &sync;
  }
  const SparseGradientSync* owner = nullptr;
  for (const SparseGradientSync& sync : syncs) {
    if (!names(sync.slice.indices)) continue;
    DOPPIO_ENFORCE(owner == nullptr, "Parallelize: update op ", op.type(), " '", op.name(),
                   "' reads indices '", sync.slice.indices,
                   "' shared by the sparse gradients of '", owner ? owner->param : "", "' and '",
                   sync.param, "' but neither's values; cannot tell which to concatenate");
    owner = &sync;
  }
  return owner;
}

}  // namespace

GradientWrapper AllDevicesSliceNames(const std::string& param) {
  return GradientWrapper{"", param + "_grad_indices_all_devices",
                         param + "_grad_values_all_devices"};
}

std::vector<SparseGradientSync> PlanSparseGradientSync(
    const std::map<std::string, GradientWrapper>& sparse_grads,
    const std::set<std::string>& template_blobs) {
  std::vector<SparseGradientSync> syncs;
  for (const auto& entry : sparse_grads) {
    const GradientWrapper& slice = entry.second;
    DOPPIO_ENFORCE(!slice.indices.empty() && !slice.values.empty(),
                   "Parallelize: parameter '", entry.first,
                   "' has a GradientSlice without indices or values ('", slice.indices, "', '",
                   slice.values, "')");
    SparseGradientSync sync{entry.first, slice, AllDevicesSliceNames(entry.first)};
    for (const std::string& name : {sync.gathered.indices, sync.gathered.values}) {
      DOPPIO_ENFORCE(!template_blobs.count(name) && !template_blobs.count(name + "_split"),
                     "Parallelize: blob '", name,
                     "' already exists in the model; the pass needs that name for the "
                     "all-devices concatenation of parameter '", entry.first,
                     "''s sparse gradient");
    }
    syncs.push_back(sync);
  }
  return syncs;
}

std::vector<OperatorDef> AllDevicesConcatOps(const SparseGradientSync& sync,
                                             const std::vector<std::string>& prefixes,
                                             const std::vector<DeviceOption>& device_options) {
  DOPPIO_ENFORCE_EQ(prefixes.size(), device_options.size(),
                    "AllDevicesConcatOps: one device option per prefix");
  std::vector<std::string> indices;
  std::vector<std::string> values;
  for (const std::string& prefix : prefixes) {
    indices.push_back(prefix + sync.slice.indices);
    values.push_back(prefix + sync.slice.values);
  }
  std::vector<OperatorDef> ops;
  for (size_t d = 0; d < prefixes.size(); ++d) {
    ops.push_back(ConcatAlongRows(indices, prefixes[d] + sync.gathered.indices, device_options[d]));
    ops.push_back(ConcatAlongRows(values, prefixes[d] + sync.gathered.values, device_options[d]));
  }
  return ops;
}

void UseAllDevicesSlices(const std::vector<SparseGradientSync>& syncs, NetDef* update_net) {
  for (OperatorDef& op : *update_net->mutable_op()) {
    const SparseGradientSync* owner = OwnerOf(syncs, op);
    if (owner == nullptr) continue;
    auto rename = [owner](std::string* blob) {
      if (*blob == owner->slice.indices) *blob = owner->gathered.indices;
      else if (*blob == owner->slice.values) *blob = owner->gathered.values;
    };
    for (std::string& input : *op.mutable_input()) rename(&input);
    for (std::string& output : *op.mutable_output()) rename(&output);
  }
}

}  // namespace doppio
