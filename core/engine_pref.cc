#include "core/engine_pref.h"

#include <mutex>

#include "core/enforce.h"
#include "core/registry.h"

namespace doppio {
namespace {

std::mutex& PrefMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

PerOpEnginePref& PerOp() {
  static auto* preferences = new PerOpEnginePref();
  return *preferences;
}

GlobalEnginePref& Global() {
  static auto* preferences = new GlobalEnginePref();
  return *preferences;
}

const char* DeviceLabel(DeviceKind device) { return device == DeviceKind::kCUDA ? "CUDA" : "CPU"; }

// A preference for an op type the device cannot run is a typo or a
// missing build option: said at once, as Caffe2 does.
void EnforceRegistered(const std::string& op_type, DeviceKind device) {
  bool registered = false;
  for (const OperatorKey& key : OperatorRegistry::Keys()) {
    if (key.type == op_type && key.device == device) registered = true;
  }
  DOPPIO_ENFORCE(registered, "engine preference for operator type '", op_type, "', which has no ",
                 DeviceLabel(device), " kernel");
}

}  // namespace

void SetPerOpEnginePref(const PerOpEnginePref& preferences) {
  for (const auto& [device, per_type] : preferences) {
    for (const auto& entry : per_type) EnforceRegistered(entry.first, device);
  }
  std::lock_guard<std::mutex> lock(PrefMutex());
  PerOp() = preferences;
}

void SetGlobalEnginePref(const GlobalEnginePref& preferences) {
  std::lock_guard<std::mutex> lock(PrefMutex());
  Global() = preferences;
}

void SetEnginePref(const PerOpEnginePref& per_op, const GlobalEnginePref& global) {
  SetPerOpEnginePref(per_op);
  SetGlobalEnginePref(global);
}

void SetOpEnginePref(const std::string& op_type,
                     const std::map<DeviceKind, std::vector<std::string>>& preferences) {
  for (const auto& entry : preferences) EnforceRegistered(op_type, entry.first);
  std::lock_guard<std::mutex> lock(PrefMutex());
  for (const auto& [device, engines] : preferences) PerOp()[device][op_type] = engines;
}

std::vector<std::string> PreferredEngines(const std::string& op_type, DeviceKind device) {
  std::lock_guard<std::mutex> lock(PrefMutex());
  std::vector<std::string> engines;
  auto per_device = PerOp().find(device);
  if (per_device != PerOp().end()) {
    auto per_type = per_device->second.find(op_type);
    if (per_type != per_device->second.end()) engines = per_type->second;
  }
  auto global = Global().find(device);
  if (global != Global().end()) {
    engines.insert(engines.end(), global->second.begin(), global->second.end());
  }
  return engines;
}

}  // namespace doppio
