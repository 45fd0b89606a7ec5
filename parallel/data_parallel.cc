#include "parallel/data_parallel.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/argument.h"
#include "core/backward.h"
#include "core/enforce.h"
#include "parallel/combine_spatial_bn.h"
#include "parallel/device_collectives.h"
#include "parallel/shared_model.h"
#include "parallel/sparse_gradients.h"

namespace doppio {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ", ";
    joined += "'" + name + "'";
  }
  return joined;
}

void ValidateOptions(const ParallelizeOptions& options) {
  DOPPIO_ENFORCE(!options.devices.empty(), "Parallelize: the device list is empty");
  std::set<int> seen;
  for (int device : options.devices) {
    DOPPIO_ENFORCE(device >= 0, "Parallelize: device ids must be >= 0, got ", device);
    DOPPIO_ENFORCE(seen.insert(device).second, "Parallelize: device ", device,
                   " is listed twice");
  }
  // DevicePrefix refuses device types this increment does not handle.
  DevicePrefix(options.device_type, options.devices.front());
  DOPPIO_ENFORCE(options.num_threads_per_device >= 1,
                 "Parallelize: num_threads_per_device must be >= 1, got ",
                 options.num_threads_per_device);
  DOPPIO_ENFORCE(!options.net_type.empty(), "Parallelize: net_type is empty");
  DOPPIO_ENFORCE(!options.shared_model || options.device_type == CPU,
                 "Parallelize: shared_model is only supported on CPU devices");
  ValidateRendezvous(options.rendezvous);
}

// One replica's view: its blob prefix and DeviceOption.
struct Replica {
  std::string prefix;
  DeviceOption device_option;
};

// Clones ops onto every replica and keeps the shared-blob rules.
class Cloner {
 public:
  // `master_blobs` (the params of a shared model) exist once, under the
  // first replica's prefix, and every replica's ops use that copy.
  Cloner(const std::vector<Replica>& replicas, const std::set<std::string>& shared,
         const std::set<std::string>& master_blobs)
      : replicas_(replicas), shared_(shared), master_blobs_(master_blobs) {}

  bool IsShared(const std::string& blob) const { return shared_.count(blob) > 0; }

  std::string Rename(const std::string& blob, const Replica& replica) const {
    if (IsShared(blob)) return blob;
    if (master_blobs_.count(blob)) return replicas_.front().prefix + blob;
    return replica.prefix + blob;
  }

  // An op whose outputs are all shared runs once for all replicas. Mixing
  // shared and per-device outputs, or computing a shared blob from a
  // per-device one, has no single right placement, so it is refused.
  bool IsSharedOp(const OperatorDef& op, const std::string& where) const {
    int shared_outputs = 0;
    for (const std::string& output : op.output()) shared_outputs += IsShared(output);
    if (shared_outputs == 0) return false;
    DOPPIO_ENFORCE(shared_outputs == op.output_size(), "Parallelize: op ", op.type(),
                   " '", op.name(), "' in ", where,
                   " writes both shared and per-device blobs (outputs ",
                   JoinNames({op.output().begin(), op.output().end()}),
                   "); a shared blob must be written by ops whose outputs are all shared");
    for (const std::string& input : op.input()) {
      DOPPIO_ENFORCE(IsShared(input), "Parallelize: op ", op.type(), " '", op.name(),
                     "' in ", where, " writes shared blob '", op.output(0),
                     "' from per-device blob '", input,
                     "'; mark that input shared too or do not share the output");
    }
    return true;
  }

  OperatorDef Clone(const OperatorDef& op, const Replica& replica) const {
    OperatorDef clone = op;
    for (std::string& input : *clone.mutable_input()) input = Rename(input, replica);
    for (std::string& output : *clone.mutable_output()) output = Rename(output, replica);
    for (std::string& control : *clone.mutable_control_input()) {
      control = Rename(control, replica);
    }
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
    if (!clone.has_device_option()) *clone.mutable_device_option() = replicas_.front().device_option;
    return clone;
  }

  // Appends `ops` replica after replica (shared ops once, with the first),
  // calling after_op(template index, replica index) after each clone; an op
  // flagged in master_only goes to the first replica alone. With
  // op_major, op i goes to every replica before op i + 1 does: in the net's
  // listed order, a collective after op i then precedes every replica's
  // later backward ops, so the last layer's gradients are reduced while the
  // first layer's are still being computed.
  template <typename AfterOp>
  void AppendAll(const std::vector<OperatorDef>& ops, const std::string& where, NetDef* out,
                 AfterOp after_op, bool op_major = false,
                 const std::vector<bool>& master_only = {}) const {
    std::vector<bool> shared_op(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) shared_op[i] = IsSharedOp(ops[i], where);
    auto append = [&](size_t i, size_t r) {
      if (i < master_only.size() && master_only[i]) {
        if (r == 0) *out->add_op() = shared_op[i] ? CloneShared(ops[i]) : Clone(ops[i], replicas_[0]);
      } else if (shared_op[i]) {
        if (r == 0) *out->add_op() = CloneShared(ops[i]);
      } else {
        *out->add_op() = Clone(ops[i], replicas_[r]);
      }
      after_op(static_cast<int>(i), static_cast<int>(r));
    };
    if (op_major) {
      for (size_t i = 0; i < ops.size(); ++i) {
        for (size_t r = 0; r < replicas_.size(); ++r) append(i, r);
      }
      return;
    }
    for (size_t r = 0; r < replicas_.size(); ++r) {
      for (size_t i = 0; i < ops.size(); ++i) append(i, r);
    }
  }

  void AppendAll(const std::vector<OperatorDef>& ops, const std::string& where, NetDef* out,
                 const std::vector<bool>& master_only = {}) const {
    AppendAll(ops, where, out, [](int, int) {}, /*op_major=*/false, master_only);
  }

  // One name per replica, or the name itself once when it is shared (or the
  // master's copy of a shared-model param).
  std::vector<std::string> RenameAll(const std::string& blob) const {
    if (IsShared(blob)) return {blob};
    if (master_blobs_.count(blob)) return {replicas_.front().prefix + blob};
    std::vector<std::string> names;
    for (const Replica& replica : replicas_) names.push_back(replica.prefix + blob);
    return names;
  }

 private:
  const std::vector<Replica>& replicas_;
  const std::set<std::string>& shared_;
  const std::set<std::string>& master_blobs_;
};

std::vector<OperatorDef> OpsOf(const NetDef& net) {
  return {net.op().begin(), net.op().end()};
}

// Every blob an op reads before any earlier op of the net writes it.
void SetExternalInputs(NetDef* net) {
  std::set<std::string> produced;
  std::set<std::string> listed;
  net->clear_external_input();
  for (const OperatorDef& op : net->op()) {
    for (const std::string& input : op.input()) {
      if (!produced.count(input) && listed.insert(input).second) net->add_external_input(input);
    }
    for (const std::string& control : op.control_input()) {
      if (!produced.count(control) && listed.insert(control).second) {
        net->add_external_input(control);
      }
    }
    for (const std::string& output : op.output()) produced.insert(output);
  }
}

void SetExternalOutputs(const NetDef& model_net, const Cloner& cloner, NetDef* net) {
  net->clear_external_output();
  std::set<std::string> listed;
  for (const std::string& output : model_net.external_output()) {
    for (const std::string& name : cloner.RenameAll(output)) {
      if (listed.insert(name).second) net->add_external_output(name);
    }
  }
}

// Index of the first forward op reading each param: reducing gradients in
// reverse of that order lets the earliest-finished gradients go first.
std::map<std::string, int> FirstUse(const NetDef& net) {
  std::map<std::string, int> first_use;
  for (int i = 0; i < net.op_size(); ++i) {
    for (const std::string& input : net.op(i).input()) first_use.emplace(input, i);
  }
  return first_use;
}

}  // namespace

std::string DevicePrefix(int device_type, int device_id) {
  if (device_type == CUDA) return "gpu_" + std::to_string(device_id) + "/";
  DOPPIO_ENFORCE(device_type == CPU, "Parallelize: device type ", device_type,
                 " is not supported; only CPU (", static_cast<int>(CPU), ") and CUDA (",
                 static_cast<int>(CUDA), ")");
  return "cpu_" + std::to_string(device_id) + "/";
}

Parallelized Parallelize(const DataParallelTemplate& model,
                         const ParallelizeOptions& options) {
  ValidateOptions(options);

  std::set<std::string> forward_outputs;
  for (const OperatorDef& op : model.net.op()) {
    forward_outputs.insert(op.output().begin(), op.output().end());
  }
  for (const std::string& loss : model.losses) {
    DOPPIO_ENFORCE(forward_outputs.count(loss), "Parallelize: loss '", loss,
                   "' is not produced by any op of net '", model.net.name(), "'");
  }
  DOPPIO_ENFORCE(!model.losses.empty() || model.param_update_net.op_size() == 0,
                 "Parallelize: net '", model.net.name(),
                 "' has parameter update ops but no losses to compute gradients from");

  Parallelized result;
  std::vector<OperatorDef> train_ops = OpsOf(model.net);
  if (!model.losses.empty()) {
    BackwardResult backward = AddGradientOperators(model.net, model.losses);
    for (const std::string& param : model.params) {
      auto found = backward.gradients.find(param);
      if (found == backward.gradients.end()) continue;  // the losses do not reach it
      const GradientWrapper& grad = found->second;
      if (grad.IsSparse()) {
        result.sparse_param_to_grad[param] = grad;
      } else {
        result.param_to_grad[param] = grad.dense;
      }
    }
    train_ops.insert(train_ops.end(), backward.ops.begin(), backward.ops.end());
  }

  std::vector<Replica> replicas;
  for (int device : options.devices) {
    Replica replica;
    replica.prefix = DevicePrefix(options.device_type, device);
    replica.device_option.set_device_type(options.device_type);
    replica.device_option.set_cuda_gpu_id(device);
    replicas.push_back(replica);
  }
  const std::set<std::string> shared(options.shared_blobs.begin(), options.shared_blobs.end());
  // The params of a shared model exist once, the master's; none otherwise.
  std::set<std::string> master_params;
  if (options.shared_model) {
    CheckSharedModelTemplate(model, train_ops);
    master_params.insert(model.params.begin(), model.params.end());
  }
  const Cloner cloner(replicas, shared, master_params);
  for (const auto& entry : result.param_to_grad) {
    DOPPIO_ENFORCE(!shared.count(entry.first) && !shared.count(entry.second),
                   "Parallelize: parameter '", entry.first, "' or its gradient '", entry.second,
                   "' is listed as shared; parameters are replicated per device");
  }
  for (const Replica& replica : replicas) {
    std::map<std::string, std::string> device_map;
    const bool owns_params = !options.shared_model || &replica == &replicas.front();
    for (const auto& entry : result.param_to_grad) {
      if (!owns_params) break;
      device_map[replica.prefix + entry.first] = replica.prefix + entry.second;
    }
    result.device_param_to_grad.push_back(device_map);
  }

  // ---- train net: forward + backward per device, allreduces, updates ----
  const int num_devices = static_cast<int>(replicas.size());
  const bool distributed = IsDistributed(options.rendezvous);
  DOPPIO_ENFORCE(!distributed || result.sparse_param_to_grad.empty(),
                 "Parallelize: sparse gradients across shards (rendezvous with num_shards ",
                 options.rendezvous.num_shards, ") are not implemented yet; parameter '",
                 result.sparse_param_to_grad.empty() ? std::string()
                                                     : result.sparse_param_to_grad.begin()->first,
                 "' has one");
  // Rewritten before any index into train_ops is taken below; the train ops
  // are emitted op-major, which the cross-device statistics need.
  std::map<int, std::vector<std::string>> bn_allreduce_after;
  if (options.combine_spatial_bn && num_devices > 1) {
    bn_allreduce_after = CombineSpatialBN(&train_ops, num_devices);
  }
  // Sparse gradients are concatenated over the devices instead of summed
  // (parallel/sparse_gradients.h); one device applies its slice as it is.
  std::vector<SparseGradientSync> sparse_syncs;
  NetDef update_net = model.param_update_net;
  if (num_devices > 1 && !result.sparse_param_to_grad.empty()) {
    std::set<std::string> template_blobs;
    const NetDef& update_template = update_net;
    for (const NetDef* template_net : {&model.param_init_net, &model.net, &update_template}) {
      for (const OperatorDef& op : template_net->op()) {
        template_blobs.insert(op.input().begin(), op.input().end());
        template_blobs.insert(op.output().begin(), op.output().end());
      }
    }
    for (const OperatorDef& op : train_ops) {
      template_blobs.insert(op.output().begin(), op.output().end());
    }
    sparse_syncs = PlanSparseGradientSync(result.sparse_param_to_grad, template_blobs);
    for (const SparseGradientSync& sync : sparse_syncs) {
      DOPPIO_ENFORCE(!shared.count(sync.slice.indices) && !shared.count(sync.slice.values),
                     "Parallelize: the sparse gradient of parameter '", sync.param, "' ('",
                     sync.slice.indices, "', '", sync.slice.values,
                     "') is listed as shared; each device concatenates every device's own");
      // CUDA devices gather the rows on device 0 through staged copies
      // (DeviceCollectives::GatherRows), whose names must be free too.
      for (const Replica& peer : replicas) {
        if (options.device_type != CUDA || &peer == &replicas.front()) continue;
        for (const std::string& gathered : {sync.gathered.indices, sync.gathered.values}) {
          const std::string staged = StagedCopyName(gathered, peer.device_option.cuda_gpu_id());
          DOPPIO_ENFORCE(!template_blobs.count(staged), "Parallelize: blob '", staged,
                         "' already exists in the model; the pass needs that name to gather "
                         "parameter '", sync.param, "''s sparse gradient on device ",
                         replicas.front().device_option.cuda_gpu_id());
        }
      }
    }
    UseAllDevicesSlices(sparse_syncs, &update_net);
    for (const SparseGradientSync& sync : sparse_syncs) {
      result.sparse_param_to_grad[sync.param] = sync.gathered;
    }
  }
  std::map<int, std::vector<const SparseGradientSync*>> concat_after;
  for (const SparseGradientSync& sync : sparse_syncs) {
    int last_touch = -1;
    for (int i = 0; i < static_cast<int>(train_ops.size()); ++i) {
      for (const auto* blobs : {&train_ops[i].input(), &train_ops[i].output()}) {
        for (const std::string& blob : *blobs) {
          if (blob == sync.slice.indices || blob == sync.slice.values) last_touch = i;
        }
      }
    }
    DOPPIO_ENFORCE(last_touch >= 0, "Parallelize: no op of net '", model.net.name(),
                   "' or its backward touches the sparse gradient of '", sync.param, "'");
    concat_after[last_touch].push_back(&sync);
  }
  // grad -> index of the last template op reading or writing it: reducing
  // earlier would change what later backward ops of that device read.
  std::map<int, std::vector<std::string>> allreduce_after = std::move(bn_allreduce_after);
  // Across shards: buckets of gradients (parallel/distributed.h), each after
  // the last op touching any of its gradients.
  std::map<int, std::vector<std::vector<std::string>>> buckets_after;
  if (num_devices > 1 || distributed) {
    std::map<std::string, int> last_touch;
    std::set<std::string> grads;
    for (const auto& entry : result.param_to_grad) grads.insert(entry.second);
    for (int i = 0; i < static_cast<int>(train_ops.size()); ++i) {
      for (const std::string& blob : train_ops[i].input()) {
        if (grads.count(blob)) last_touch[blob] = i;
      }
      for (const std::string& blob : train_ops[i].output()) {
        if (grads.count(blob)) last_touch[blob] = i;
      }
    }
    const std::map<std::string, int> first_use = FirstUse(model.net);
    std::vector<std::pair<int, std::string>> order;  // (first use, param)
    for (const auto& entry : result.param_to_grad) {
      auto use = first_use.find(entry.first);
      order.emplace_back(use == first_use.end() ? -1 : use->second, entry.first);
    }
    std::sort(order.rbegin(), order.rend());
    // CUDA devices send each gradient alone (parallel/distributed.h).
    const bool bucketed = distributed && options.device_type == CPU;
    const std::map<std::string, int64_t> elements =
        bucketed ? InferredFloatElements(model.param_init_net)
                 : std::map<std::string, int64_t>();
    std::vector<GradientToReduce> across_shards;
    for (const auto& item : order) {
      const std::string& grad = result.param_to_grad.at(item.second);
      allreduce_after[last_touch.at(grad)].push_back(grad);
      auto known = elements.find(item.second);  // a dense gradient has its param's shape
      across_shards.push_back({grad, known == elements.end() ? -1 : known->second});
    }
    if (distributed) {
      const double cap_mb = bucketed ? options.rendezvous.bucket_cap_mb : 0;
      for (std::vector<std::string>& bucket : PlanGradientBuckets(across_shards, cap_mb)) {
        int after = -1;
        for (const std::string& grad : bucket) after = std::max(after, last_touch.at(grad));
        buckets_after[after].push_back(std::move(bucket));
      }
    }
  }

  ShardCollectives net_shards(options.rendezvous, replicas.front().device_option);
  std::vector<std::string> prefixes;
  std::vector<DeviceOption> device_options;
  for (const Replica& each : replicas) {
    prefixes.push_back(each.prefix);
    device_options.push_back(each.device_option);
  }
  DeviceCollectives net_devices(prefixes, device_options, options.use_nccl);
  std::set<std::string> grad_names;
  for (const auto& entry : result.param_to_grad) grad_names.insert(entry.second);
  NetDef& net = result.net;
  net.set_name(model.net.name());
  *net.mutable_arg() = model.net.arg();
  cloner.AppendAll(train_ops, "net '" + model.net.name() + "'", &net,
                   [&](int index, int replica) {
                     if (replica != num_devices - 1) return;
                     auto it = allreduce_after.find(index);
                     if (it != allreduce_after.end()) {
                       for (const std::string& grad : it->second) {
                         const std::vector<std::string> copies = cloner.RenameAll(grad);
                         // A gradient summed across shards next needs the
                         // local sum on device 0 only; Broadcast follows.
                         std::vector<OperatorDef> ops =
                             distributed && grad_names.count(grad)
                                 ? net_devices.ReduceToFirst(grad, copies)
                                 : net_devices.Allreduce(grad, copies);
                         for (OperatorDef& op : ops) *net.add_op() = std::move(op);
                       }
                     }
                     auto buckets = buckets_after.find(index);
                     if (buckets != buckets_after.end()) {
                       for (const std::vector<std::string>& bucket : buckets->second) {
                         // Device 0's copies hold the local sums.
                         std::vector<std::string> masters;
                         for (const std::string& grad : bucket) {
                           masters.push_back(cloner.RenameAll(grad).front());
                         }
                         *net.add_op() = net_shards.AllreduceBucket(masters);
                         for (const std::string& grad : bucket) {
                           for (OperatorDef& op :
                                net_devices.Broadcast(grad, cloner.RenameAll(grad))) {
                             *net.add_op() = std::move(op);
                           }
                         }
                       }
                     }
                     auto sparse = concat_after.find(index);
                     if (sparse == concat_after.end()) return;
                     for (const SparseGradientSync* sync : sparse->second) {
                       if (options.device_type == CUDA) {
                         // (per-device slice blob, its gathered name)
                         const std::pair<std::string, std::string> parts[] = {
                             {sync->slice.indices, sync->gathered.indices},
                             {sync->slice.values, sync->gathered.values}};
                         for (const auto& part : parts) {
                           const std::vector<std::string> slices = cloner.RenameAll(part.first);
                           for (OperatorDef& op : net_devices.GatherRows(part.second, slices)) {
                             *net.add_op() = std::move(op);
                           }
                         }
                         continue;
                       }
                       for (OperatorDef& op : AllDevicesConcatOps(*sync, prefixes, device_options)) {
                         // A shared model's update runs on the master alone.
                         if (options.shared_model && op.output(0).rfind(prefixes.front(), 0) != 0) {
                           continue;
                         }
                         *net.add_op() = std::move(op);
                       }
                     }
                   },
                   /*op_major=*/true);
  // A shared model has one copy of each param to update: the master's.
  cloner.AppendAll(OpsOf(update_net),
                   "param_update_net '" + model.param_update_net.name() + "'", &net,
                   std::vector<bool>(update_net.op_size(), options.shared_model));
  net.set_type(options.net_type);
  // Doppio's dag executor reads num_workers per device (each device has its
  // own pool), so this is Caffe2's total divided by the device count. An
  // argument: the NetDef field of that name is deprecated.
  SetArgument(&net, "num_workers", options.num_threads_per_device);
  SetExternalInputs(&net);
  SetExternalOutputs(model.net, cloner, &net);

  // ---- init net: per device, then device 0's values everywhere ----
  NetDef& init = result.param_init_net;
  init.set_name(model.param_init_net.name());
  *init.mutable_arg() = model.param_init_net.arg();
  if (model.param_init_net.has_type()) init.set_type(model.param_init_net.type());
  std::vector<bool> init_master_only;
  if (options.shared_model) init_master_only = MasterOnlyInitOps(model, train_ops);
  ShardCollectives init_shards(options.rendezvous, replicas.front().device_option);
  DeviceCollectives init_devices(prefixes, device_options, options.use_nccl);
  cloner.AppendAll(OpsOf(model.param_init_net),
                   "param_init_net '" + model.param_init_net.name() + "'", &init,
                   init_master_only);
  // After the template's ops: one of them may make the store handler.
  if (distributed) *init.add_op() = init_shards.CreateCommonWorld();
  if (num_devices > 1 || distributed) {
    std::set<std::string> initialized;
    for (const OperatorDef& op : model.param_init_net.op()) {
      initialized.insert(op.output().begin(), op.output().end());
    }
    std::vector<std::string> to_broadcast = model.params;
    if (options.broadcast_computed_params) {
      to_broadcast.insert(to_broadcast.end(), model.computed_params.begin(),
                          model.computed_params.end());
    }
    std::set<std::string> done;
    for (const std::string& blob : to_broadcast) {
      // A blob the init net does not make (loaded from a checkpoint later)
      // is synced by FinalizeAfterCheckpoint instead.
      if (!initialized.count(blob) || shared.count(blob) || !done.insert(blob).second) {
        continue;
      }
      const std::vector<std::string> copies = cloner.RenameAll(blob);
      // Across processes first, so the local copies get shard 0's value. A
      // shared model's params exist once per process: no local copies.
      if (distributed) *init.add_op() = init_shards.Broadcast(copies.front());
      if (!master_params.count(blob)) {
        for (OperatorDef& op : init_devices.Broadcast(blob, copies)) *init.add_op() = std::move(op);
      }
    }
  }
  SetExternalInputs(&init);
  SetExternalOutputs(model.param_init_net, cloner, &init);
  return result;
}

}  // namespace doppio
