#include "parallel/cross_device_copies.h"

#include <vector>

#include "core/enforce.h"

namespace doppio {
namespace {

DeviceOption CpuDevice() {
  DeviceOption cpu;
  cpu.set_device_type(CPU);
  return cpu;
}

// Caffe2's Copy ops read or write host memory on one side whatever device
// they are placed on; every other op reads and writes on its own device.
void InferBlobDevices(const OperatorDef& op, const DeviceOption& op_device,
                      std::vector<DeviceOption>* inputs, std::vector<DeviceOption>* outputs) {
  const bool host_inputs = op.type() == "CopyCPUToGPU" || op.type() == "CopyFromCPUInput";
  const bool host_outputs = op.type() == "CopyGPUToCPU";
  inputs->assign(op.input_size(), host_inputs ? CpuDevice() : op_device);
  outputs->assign(op.output_size(), host_outputs ? CpuDevice() : op_device);
}

std::string DeviceText(const DeviceOption& device) {
  return (device.device_type() == CUDA ? "gpu " : "cpu ") + std::to_string(device.cuda_gpu_id());
}

std::string OpText(const OperatorDef& op, int index) {
  std::string text = "op #" + std::to_string(index) + " (" + op.type();
  if (!op.name().empty()) text += " '" + op.name() + "'";
  return text + ")";
}

// Which op moves a blob from `src` to `dst`, and on which device it runs: a
// CUDA copy runs on the GPU side, a host copy on the reader's device.
OperatorDef MakeCopy(const std::string& from, const std::string& to, const DeviceOption& src,
                     const DeviceOption& dst) {
  OperatorDef copy;
  copy.add_input(from);
  copy.add_output(to);
  if (src.device_type() == CPU && dst.device_type() == CUDA) {
    copy.set_type("CopyCPUToGPU");
    *copy.mutable_device_option() = dst;
  } else if (src.device_type() == CUDA && dst.device_type() == CPU) {
    copy.set_type("CopyGPUToCPU");
    *copy.mutable_device_option() = src;
  } else {
    DOPPIO_ENFORCE((src.device_type() == CPU || src.device_type() == CUDA) &&
                       src.device_type() == dst.device_type(),
                   "InjectCrossDeviceCopies: cannot copy blob '", from, "' from device type ",
                   src.device_type(), " to device type ", dst.device_type());
    copy.set_type("Copy");
    *copy.mutable_device_option() = dst;
  }
  return copy;
}

RemapKey KeyOf(const std::string& blob, const DeviceOption& device) {
  return RemapKey(blob, device.device_type(), device.cuda_gpu_id());
}

// A blob written again makes its copies stale: later readers copy anew.
void ForgetCopiesOf(const std::string& blob, std::map<RemapKey, std::string>* remap) {
  auto it = remap->lower_bound(RemapKey(blob, INT32_MIN, INT32_MIN));
  while (it != remap->end() && std::get<0>(it->first) == blob) it = remap->erase(it);
}

}  // namespace

DeviceOption EffectiveDevice(const OperatorDef& op, const NetDef& net) {
  if (op.has_device_option()) return op.device_option();
  if (net.has_device_option()) return net.device_option();
  return CpuDevice();
}

bool SameDevice(const DeviceOption& a, const DeviceOption& b) {
  // CPU ids matter too: each CPU id is its own logical device (cpu_N/).
  return a.device_type() == b.device_type() && a.cuda_gpu_id() == b.cuda_gpu_id();
}

std::string CopySuffix(const DeviceOption& device) {
  const std::string id = std::to_string(device.cuda_gpu_id());
  if (device.device_type() == CUDA) return "_gpu_" + id;
  DOPPIO_ENFORCE(device.device_type() == CPU, "InjectCrossDeviceCopies: unknown device type ",
                 device.device_type());
  return device.cuda_gpu_id() == 0 ? "_cpu" : "_cpu_" + id;
}

namespace {

// One op of the net being rewritten, with the devices it reads and writes.
struct OpSite {
  const NetDef& net;
  const OperatorDef& op;
  int index;
  bool placeholder;
  std::vector<DeviceOption> input_devices;
  std::vector<DeviceOption> output_devices;
};

// Points each input of `new_op` at a copy on the device the op reads it
// on, appending the Copy ops `result` needs (one per blob and device,
// reused while the blob is not written again).
void RouteInputs(const OpSite& site, const std::set<std::string>& external,
                 CrossDeviceState* state, OperatorDef* new_op, NetDef* result) {
  auto& blob_to_device = state->blob_to_device;
  auto& blob_remap = state->blob_remap;
  const OperatorDef& op = site.op;
  for (int i = 0; i < op.input_size(); ++i) {
    const std::string& input = op.input(i);
    const DeviceOption& wanted = site.input_devices[i];
    auto known = blob_to_device.find(input);
    if (known == blob_to_device.end()) {
      DOPPIO_ENFORCE(external.count(input) > 0, "InjectCrossDeviceCopies: blob '", input,
                     "' read by ", OpText(op, site.index), " on ", DeviceText(wanted),
                     " is neither written by an earlier op nor an external input of net '",
                     site.net.name(), "', so its device is unknown");
      // Fed from outside: it lives where its first reader wants it.
      known = blob_to_device.emplace(input, wanted).first;
    }
    // A placeholder op takes its inputs wherever they are.
    if (site.placeholder || SameDevice(known->second, wanted)) continue;
    const RemapKey key = KeyOf(input, wanted);
    auto cached = blob_remap.find(key);
    if (cached != blob_remap.end()) {
      auto where = blob_to_device.find(cached->second);
      if (where != blob_to_device.end() && SameDevice(where->second, wanted)) {
        new_op->set_input(i, cached->second);
        continue;
      }
    }
    const std::string copy_name = input + CopySuffix(wanted);
    *result->add_op() = MakeCopy(input, copy_name, known->second, wanted);
    blob_remap[key] = copy_name;
    blob_to_device[copy_name] = wanted;
    new_op->set_input(i, copy_name);
  }
}

// Names each output of `new_op` (in-place outputs follow their input's
// copy; placeholder ops write host blobs) and refuses a blob written on two
// devices.
void RouteOutputs(const OpSite& site, const CrossDeviceState& state, OperatorDef* new_op) {
  const OperatorDef& op = site.op;
  for (int o = 0; o < op.output_size(); ++o) {
    const std::string& output = op.output(o);
    bool in_place = false;
    for (int i = 0; i < op.input_size(); ++i) {
      if (op.input(i) != output) continue;
      // An in-place op keeps writing what it reads: the copy, if it got one.
      new_op->set_output(o, new_op->input(i));
      in_place = true;
      break;
    }
    auto known = state.blob_to_device.find(output);
    // Caffe2's placeholder ops (Recv...) write host blobs.
    if (site.placeholder && !in_place && known != state.blob_to_device.end() &&
        known->second.device_type() != CPU) {
      new_op->set_output(o, output + "_cpu");
    }
    DOPPIO_ENFORCE(in_place || known == state.blob_to_device.end() ||
                       SameDevice(known->second, site.output_devices[o]),
                   "InjectCrossDeviceCopies: blob '", output, "' is written on ",
                   DeviceText(site.output_devices[o]), " by ", OpText(op, site.index),
                   " but lives on ",
                   DeviceText(known == state.blob_to_device.end() ? site.output_devices[o]
                                                                  : known->second),
                   "; ops on different devices may not write one blob");
  }
}

}  // namespace

NetDef InjectCrossDeviceCopies(const NetDef& net, CrossDeviceState* state,
                               const std::set<std::string>& placeholder_ops) {
  DOPPIO_ENFORCE(state != nullptr, "InjectCrossDeviceCopies: state must not be null");
  NetDef result = net;
  result.clear_op();
  result.set_name(net.name() + "_cross_device");
  const std::set<std::string> external(net.external_input().begin(), net.external_input().end());
  // Copies an earlier net made of this net's external inputs are inputs too.
  for (const auto& entry : state->blob_remap) {
    if (external.count(std::get<0>(entry.first))) result.add_external_input(entry.second);
  }
  for (int index = 0; index < net.op_size(); ++index) {
    const OperatorDef& op = net.op(index);
    OpSite site{net, op, index, placeholder_ops.count(op.type()) > 0, {}, {}};
    InferBlobDevices(op, EffectiveDevice(op, net), &site.input_devices, &site.output_devices);
    OperatorDef new_op = op;
    RouteInputs(site, external, state, &new_op, &result);
    RouteOutputs(site, *state, &new_op);
    for (int o = 0; o < new_op.output_size(); ++o) {
      state->blob_to_device[new_op.output(o)] = site.output_devices[o];
      ForgetCopiesOf(new_op.output(o), &state->blob_remap);
    }
    *result.add_op() = std::move(new_op);
  }
  return result;
}

}  // namespace doppio
