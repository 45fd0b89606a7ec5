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

}  // namespace

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
      const std::string peer_id = std::to_string(device_options_[peer].cuda_gpu_id());
      const std::string staged = prefixes_[i] + blob + "_gpu" + peer_id + "_copy";
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
  DOPPIO_ENFORCE(copies.size() == device_options_.size(), "DeviceCollectives: '", blob, "' has ",
                 copies.size(), " copies for ", device_options_.size(), " devices");
  if (copies.size() == 1) return {};
  if (!OnCuda()) {
    return {InPlaceCollective("Allreduce", "allreduce_" + blob, copies, device_options_.front())};
  }
  if (use_nccl_) return {Nccl("NCCLAllreduce", "allreduce_" + blob, copies)};
  std::vector<OperatorDef> ops = SumTree(blob, copies);
  for (OperatorDef& op : Broadcast(blob, copies)) ops.push_back(std::move(op));
  return ops;
}

std::vector<OperatorDef> DeviceCollectives::Broadcast(const std::string& blob,
                                                      const std::vector<std::string>& copies) {
  DOPPIO_ENFORCE(copies.size() == device_options_.size(), "DeviceCollectives: '", blob, "' has ",
                 copies.size(), " copies for ", device_options_.size(), " devices");
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

}  // namespace doppio
