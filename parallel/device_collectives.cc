#include "parallel/device_collectives.h"

#include <utility>

#include "core/enforce.h"

namespace doppio {
namespace {

constexpr int kCudaDeviceType = 1;  // caffe2.proto's CUDA

OperatorDef SimpleOp(const std::string& type, const std::string& name,
                     const std::vector<std::string>& inputs, const std::string& output,
                     const DeviceOption& device_option) {
  OperatorDef op;
  op.set_type(type);
  op.set_name(name);
  for (const std::string& input : inputs) op.add_input(input);
  op.add_output(output);
  *op.mutable_device_option() = device_option;
  return op;
}

void SetRootZero(OperatorDef* op) {
  Argument* root = op->add_arg();
  root->set_name("root");
  root->set_i(0);
}

void CheckCopies(const std::string& blob, const std::vector<std::string>& copies,
                 size_t num_devices) {
  DOPPIO_ENFORCE(copies.size() == num_devices, "DeviceCollectives: '", blob, "' has ",
                 copies.size(), " copies for ", num_devices, " devices");
}

}  // namespace

std::string StagedCopyName(const std::string& blob, int peer_id) {
  return blob + "_gpu" + std::to_string(peer_id) + "_copy";
}

OperatorDef InPlaceCollective(const std::string& type, const std::string& name,
                              const std::vector<std::string>& blobs,
                              const DeviceOption& device_option) {
  OperatorDef op;
  op.set_type(type);
  op.set_name(name);
  for (const std::string& blob : blobs) {
    op.add_input(blob);
    op.add_output(blob);
  }
  *op.mutable_device_option() = device_option;
  return op;
}

DeviceCollectives::DeviceCollectives(std::vector<std::string> prefixes,
                                     std::vector<DeviceOption> device_options, bool use_nccl)
    : prefixes_(std::move(prefixes)),
      device_options_(std::move(device_options)),
      use_nccl_(use_nccl) {
  DOPPIO_ENFORCE(!device_options_.empty() && prefixes_.size() == device_options_.size(),
                 "DeviceCollectives: one prefix per device option, and at least one");
}

bool DeviceCollectives::OnCuda() const {
  return device_options_.front().device_type() == kCudaDeviceType;
}

OperatorDef DeviceCollectives::Nccl(const std::string& type, const std::string& name,
                                    const std::vector<std::string>& copies) {
  OperatorDef op = InPlaceCollective(type, name, copies, device_options_.front());
  if (!previous_nccl_.empty()) op.add_control_input(previous_nccl_);
  previous_nccl_ = copies.front();
  return op;
}

std::vector<OperatorDef> DeviceCollectives::SumTree(const std::string& blob,
                                                    const std::vector<std::string>& copies) {
  std::vector<OperatorDef> ops;
  const size_t count = copies.size();
  for (size_t stride = 1; stride < count; stride *= 2) {
    for (size_t i = 0; i + stride < count; i += 2 * stride) {
      const size_t peer = i + stride;
      const int peer_gpu = device_options_[peer].cuda_gpu_id();
      const std::string peer_id = std::to_string(peer_gpu);
      const std::string staged = prefixes_[i] + StagedCopyName(blob, peer_gpu);
      const std::string name = "allreduce_" + blob;
      ops.push_back(SimpleOp("Copy", name + "_copy_gpu" + peer_id, {copies[peer]}, staged,
                             device_options_[i]));
      ops.push_back(SimpleOp("Sum", name + "_sum_gpu" + peer_id, {copies[i], staged},
                             copies[i], device_options_[i]));
    }
  }
  return ops;
}

std::vector<OperatorDef> DeviceCollectives::Allreduce(const std::string& blob,
                                                      const std::vector<std::string>& copies) {
  CheckCopies(blob, copies, device_options_.size());
  if (copies.size() == 1) return {};
  if (!OnCuda()) {
    return {InPlaceCollective("Allreduce", "allreduce_" + blob, copies, device_options_.front())};
  }
  if (use_nccl_) return {Nccl("NCCLAllreduce", "allreduce_" + blob, copies)};
  std::vector<OperatorDef> ops = SumTree(blob, copies);
  for (OperatorDef& op : Broadcast(blob, copies)) ops.push_back(std::move(op));
  return ops;
}

std::vector<OperatorDef> DeviceCollectives::ReduceToFirst(
    const std::string& blob, const std::vector<std::string>& copies) {
  CheckCopies(blob, copies, device_options_.size());
  if (copies.size() == 1) return {};
  if (!OnCuda()) return Allreduce(blob, copies);
  if (!use_nccl_) return SumTree(blob, copies);
  // In place into device 0's copy: root 0 is the first input's rank.
  OperatorDef op = Nccl("NCCLReduce", "reduce_" + blob, copies);
  op.clear_output();
  op.add_output(copies.front());
  SetRootZero(&op);
  return {op};
}

std::vector<OperatorDef> DeviceCollectives::Broadcast(const std::string& blob,
                                                      const std::vector<std::string>& copies) {
  CheckCopies(blob, copies, device_options_.size());
  if (copies.size() == 1) return {};
  if (!OnCuda()) {
    OperatorDef op =
        InPlaceCollective("Broadcast", "broadcast_" + blob, copies, device_options_.front());
    SetRootZero(&op);
    return {op};
  }
  if (use_nccl_) {
    // root is the rank within the op's inputs, not a device id (Caffe2's note).
    OperatorDef op = Nccl("NCCLBroadcast", "broadcast_" + blob, copies);
    SetRootZero(&op);
    return {op};
  }
  std::vector<OperatorDef> ops;
  for (size_t i = 1; i < copies.size(); ++i) {
    ops.push_back(SimpleOp("Copy",
                           "broadcast_" + blob + "_to_gpu" +
                               std::to_string(device_options_[i].cuda_gpu_id()),
                           {copies.front()}, copies[i], device_options_[i]));
  }
  return ops;
}

std::vector<OperatorDef> DeviceCollectives::GatherRows(const std::string& gathered,
                                                       const std::vector<std::string>& copies) {
  CheckCopies(gathered, copies, device_options_.size());
  DOPPIO_ENFORCE(OnCuda(), "DeviceCollectives: GatherRows of '", gathered,
                 "' is the CUDA devices' form; CPU devices concatenate on each device "
                 "(parallel/sparse_gradients.h)");
  if (copies.size() == 1) return {};
  const std::string name = "gather_rows_" + gathered;
  std::vector<OperatorDef> ops;
  OperatorDef concat;
  concat.set_type("Concat");
  concat.set_name(name);
  concat.add_input(copies.front());
  for (size_t i = 1; i < copies.size(); ++i) {
    const int peer_gpu = device_options_[i].cuda_gpu_id();
    const std::string staged = prefixes_.front() + StagedCopyName(gathered, peer_gpu);
    ops.push_back(SimpleOp("Copy", name + "_copy_gpu" + std::to_string(peer_gpu), {copies[i]},
                           staged, device_options_.front()));
    concat.add_input(staged);
  }
  const std::string on_first = prefixes_.front() + gathered;
  concat.add_output(on_first);
  concat.add_output(on_first + "_split");
  Argument* axis = concat.add_arg();
  axis->set_name("axis");
  axis->set_i(0);
  *concat.mutable_device_option() = device_options_.front();
  ops.push_back(concat);
  for (size_t i = 1; i < copies.size(); ++i) {
    ops.push_back(SimpleOp("Copy",
                           name + "_to_gpu" + std::to_string(device_options_[i].cuda_gpu_id()),
                           {on_first}, prefixes_[i] + gathered, device_options_[i]));
  }
  return ops;
}

}  // namespace doppio
