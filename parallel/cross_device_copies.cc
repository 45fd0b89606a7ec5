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

NetDef InjectCrossDeviceCopies(const NetDef& net, CrossDeviceState* state,
                               const std::set<std::string>& placeholder_ops) {
  DOPPIO_ENFORCE(state != nullptr, "InjectCrossDeviceCopies: state must not be null");
  auto& blob_to_device = state->blob_to_device;
  auto& blob_remap = state->blob_remap;

  NetDef result = net;
  result.clear_op();
  result.set_name(net.name() + "_cross_device");
  const std::set<std::string> external(net.external_input().begin(), net.external_input().end());
  // Copies an earlier net made of this net's external inputs are inputs too.
  for (const auto& entry : blob_remap) {
    if (external.count(std::get<0>(entry.first))) result.add_external_input(entry.second);
  }

  std::vector<DeviceOption> input_devices, output_devices;
  for (int index = 0; index < net.op_size(); ++index) {
    const OperatorDef& op = net.op(index);
    const DeviceOption op_device = EffectiveDevice(op, net);
    const bool placeholder = placeholder_ops.count(op.type()) > 0;
    InferBlobDevices(op, op_device, &input_devices, &output_devices);

    OperatorDef new_op = op;
    for (int i = 0; i < op.input_size(); ++i) {
      const std::string& input = op.input(i);
      auto known = blob_to_device.find(input);
      if (known == blob_to_device.end()) {
        DOPPIO_ENFORCE(external.count(input) > 0, "InjectCrossDeviceCopies: blob '", input,
                       "' read by ", OpText(op, index), " on ", DeviceText(input_devices[i]),
                       " is neither written by an earlier op nor an external input of net '",
                       net.name(), "', so its device is unknown");
        // Fed from outside: it lives where its first reader wants it.
        known = blob_to_device.emplace(input, input_devices[i]).first;
      }
      // A placeholder op takes its inputs wherever they are.
      if (placeholder || SameDevice(known->second, input_devices[i])) continue;
      const RemapKey key = KeyOf(input, input_devices[i]);
      auto cached = blob_remap.find(key);
      if (cached != blob_remap.end()) {
        auto where = blob_to_device.find(cached->second);
        if (where != blob_to_device.end() && SameDevice(where->second, input_devices[i])) {
          new_op.set_input(i, cached->second);
          continue;
        }
      }
      const std::string copy_name = input + CopySuffix(input_devices[i]);
      *result.add_op() = MakeCopy(input, copy_name, known->second, input_devices[i]);
      blob_remap[key] = copy_name;
      blob_to_device[copy_name] = input_devices[i];
      new_op.set_input(i, copy_name);
    }

    for (int o = 0; o < op.output_size(); ++o) {
      const std::string& output = op.output(o);
      bool in_place = false;
      for (int i = 0; i < op.input_size(); ++i) {
        if (op.input(i) != output) continue;
        // An in-place op keeps writing what it reads: the copy, if it got one.
        new_op.set_output(o, new_op.input(i));
        in_place = true;
        break;
      }
      if (placeholder && !in_place) {
        // Caffe2's placeholder ops (Recv...) write host blobs.
        auto known = blob_to_device.find(output);
        if (known != blob_to_device.end() && known->second.device_type() != CPU) {
          new_op.set_output(o, output + "_cpu");
        }
      }
      auto known = blob_to_device.find(output);
      DOPPIO_ENFORCE(in_place || known == blob_to_device.end() ||
                         SameDevice(known->second, output_devices[o]),
                     "InjectCrossDeviceCopies: blob '", output, "' is written on ",
                     DeviceText(output_devices[o]), " by ", OpText(op, index),
                     " but lives on ", DeviceText(known == blob_to_device.end()
                                                      ? output_devices[o]
                                                      : known->second),
                     "; ops on different devices may not write one blob");
    }
    for (int o = 0; o < new_op.output_size(); ++o) {
      blob_to_device[new_op.output(o)] = output_devices[o];
      ForgetCopiesOf(new_op.output(o), &blob_remap);
    }
    *result.add_op() = std::move(new_op);
  }
  return result;
}

}  // namespace doppio
