// Caffe2's engine-preference functions of the extension
// (C.set_engine_pref, set_per_op_engine_pref, set_global_engine_pref,
// set_op_engine_pref): dicts keyed by caffe2_pb2 device types (CPU 0,
// CUDA 1), checked and handed to core/engine_pref.h, which owns the rule.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/engine_pref.h"

namespace py = pybind11;

namespace doppio {
namespace {

using Engines = std::vector<std::string>;

DeviceKind DeviceOf(int device_type) {
  if (device_type == static_cast<int>(DeviceKind::kCPU)) return DeviceKind::kCPU;
  if (device_type == static_cast<int>(DeviceKind::kCUDA)) return DeviceKind::kCUDA;
  DOPPIO_THROW_ARG("engine preference for device type ", device_type,
                                        "; Doppio has CPU (0) and CUDA (1)");
}

template <typename Value>
std::map<DeviceKind, Value> ByDevice(const std::map<int, Value>& by_type) {
  std::map<DeviceKind, Value> result;
  for (const auto& [device_type, value] : by_type) result[DeviceOf(device_type)] = value;
  return result;
}

}  // namespace

namespace python {

void DefineEnginePref(py::module_& m) {
  m.def("set_per_op_engine_pref", [](const std::map<int, std::map<std::string, Engines>>& pref) {
    SetPerOpEnginePref(ByDevice(pref));
  });
  m.def("set_global_engine_pref",
        [](const std::map<int, Engines>& pref) { SetGlobalEnginePref(ByDevice(pref)); });
  m.def("set_engine_pref", [](const std::map<int, std::map<std::string, Engines>>& per_op,
                              const std::map<int, Engines>& global) {
    SetEnginePref(ByDevice(per_op), ByDevice(global));
  });
  m.def("set_op_engine_pref", [](const std::string& op_type, const std::map<int, Engines>& pref) {
    SetOpEnginePref(op_type, ByDevice(pref));
  });
  m.def("preferred_engines", [](const std::string& op_type, int device_type) {
    return PreferredEngines(op_type, DeviceOf(device_type));
  });
}

}  // namespace python
}  // namespace doppio
