// Binding of parallel/cross_device_copies.h for doppio.core: nets and
// DeviceOptions travel as serialized protobuf bytes, as elsewhere in _C.
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/enforce.h"
#include "parallel/cross_device_copies.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

// blob_remap crosses the boundary as (blob, DeviceOption bytes, copy name).
using RemapRow = std::tuple<std::string, py::bytes, std::string>;

py::tuple InjectCrossDeviceCopiesPy(const py::bytes& net_bytes,
                                    const std::map<std::string, py::bytes>& blob_to_device,
                                    const std::vector<RemapRow>& blob_remap,
                                    const std::vector<std::string>& placeholder_ops) {
  CrossDeviceState state;
  for (const auto& entry : blob_to_device) {
    state.blob_to_device[entry.first] =
        ParseProto<DeviceOption>(entry.second, "DeviceOption of blob '" + entry.first + "'");
  }
  for (const auto& row : blob_remap) {
    const auto device = ParseProto<DeviceOption>(std::get<1>(row), "blob_remap DeviceOption");
    state.blob_remap[RemapKey(std::get<0>(row), device.device_type(), device.cuda_gpu_id())] =
        std::get<2>(row);
  }
  const NetDef net = ParseProto<NetDef>(net_bytes, "InjectCrossDeviceCopies NetDef");
  const NetDef result = InjectCrossDeviceCopies(
      net, &state, std::set<std::string>(placeholder_ops.begin(), placeholder_ops.end()));

  py::dict devices;
  for (const auto& entry : state.blob_to_device) {
    devices[py::str(entry.first)] = SerializeProto(entry.second);
  }
  py::list remap;
  for (const auto& entry : state.blob_remap) {
    DeviceOption device;
    device.set_device_type(static_cast<DeviceType>(std::get<1>(entry.first)));
    device.set_cuda_gpu_id(std::get<2>(entry.first));
    remap.append(py::make_tuple(std::get<0>(entry.first), SerializeProto(device), entry.second));
  }
  return py::make_tuple(SerializeProto(result), devices, remap);
}

}  // namespace

void DefineCrossDeviceCopies(py::module_& m) {
  m.def("inject_cross_device_copies", &InjectCrossDeviceCopiesPy, py::arg("net"),
        py::arg("blob_to_device"), py::arg("blob_remap"), py::arg("placeholder_ops"));
}

}  // namespace python
}  // namespace doppio
