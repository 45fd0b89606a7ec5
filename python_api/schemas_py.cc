// doppio._C's registry queries: registered operators and their devices,
// schemas, in-place rules and cost inference over a net.
#include "python_api/bindings.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_cost.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

py::dict SchemaInfo(const std::string& type) {
  const OpSchema* schema = OpSchemaRegistry::Schema(type);
  DOPPIO_ENFORCE(schema != nullptr, "op type '", type, "' has no schema");
  py::dict info;
  info["min_input"] = schema->min_input();
  info["max_input"] = schema->max_input();
  info["min_output"] = schema->min_output();
  info["max_output"] = schema->max_output();
  info["doc"] = schema->doc();
  info["summary"] = schema->Summary();
  return info;
}

// Schema cost inference over a serialized NetDef (tools/inspect_net): shapes
// is {blob: dims}, types optionally {blob: TensorProto.DataType} (default
// float). Returns per-op figures, their total and the inferred blob shapes.
py::dict InferNetCostPy(const py::bytes& net_bytes, const py::dict& shapes,
                        const py::object& types) {
  const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
  std::map<std::string, TensorShape> known;
  for (const auto& item : shapes) {
    const std::string name = py::str(item.first);
    TensorShape shape;
    try {
      for (int64_t d : item.second.cast<std::vector<int64_t>>()) shape.add_dims(d);
    } catch (const py::cast_error&) {
      DOPPIO_THROW("infer_net_cost: the shape of blob '", name, "' must be a list of ints");
    }
    known[name] = shape;
  }
  if (!types.is_none()) {
    for (const auto& item : types.cast<py::dict>()) {
      const std::string name = py::str(item.first);
      const int dtype = item.second.cast<int>();
      DOPPIO_ENFORCE(TensorProto::DataType_IsValid(dtype), "infer_net_cost: blob '", name,
                     "' has an invalid data type ", dtype);
      known[name].set_data_type(static_cast<TensorProto::DataType>(dtype));
    }
  }
  NetCostEstimate estimate;
  {
    py::gil_scoped_release release;
    estimate = InferNetCost(net, known);
  }
  auto cost_dict = [](const OpSchema::Cost& cost) {
    py::dict d;
    d["flops"] = cost.flops;
    d["bytes_read"] = cost.bytes_read;
    d["bytes_written"] = cost.bytes_written;
    d["params_bytes"] = cost.params_bytes;
    return d;
  };
  py::list ops;
  for (const OpCostEstimate& op : estimate.ops) {
    py::dict d = cost_dict(op.cost);
    d["index"] = op.index;
    d["type"] = op.type;
    d["name"] = op.name;
    d["known"] = op.known;
    d["reason"] = op.reason;
    ops.append(d);
  }
  py::dict inferred;
  for (const auto& item : estimate.shapes) {
    std::vector<int64_t> dims(item.second.dims().begin(), item.second.dims().end());
    inferred[py::str(item.first)] =
        py::make_tuple(dims, static_cast<int>(item.second.data_type()));
  }
  py::dict result;
  result["ops"] = ops;
  result["total"] = cost_dict(estimate.total);
  result["unknown_ops"] = estimate.unknown_ops;
  result["shapes"] = inferred;
  return result;
}

}  // namespace

void DefineSchemas(py::module_& m) {
  m.def("registered_operators", [] {
    std::vector<std::string> types;
    for (const OperatorKey& key : OperatorRegistry::Keys()) {
      if (types.empty() || types.back() != key.type) types.push_back(key.type);
    }
    return types;
  });
  // (device, engine) pairs an op type is registered under: "CPU"/"CUDA",
  // "" for the default engine.
  m.def("registered_operator_devices", [](const std::string& type) {
    std::vector<std::pair<std::string, std::string>> devices;
    for (const OperatorKey& key : OperatorRegistry::Keys()) {
      if (key.type != type) continue;
      devices.emplace_back(key.device == DeviceKind::kCUDA ? "CUDA" : "CPU", key.engine);
    }
    return devices;
  }, py::arg("op_type"));
  m.def("schema", &SchemaInfo, py::arg("op_type"));
  m.def("infer_net_cost", &InferNetCostPy, py::arg("net_def"), py::arg("shapes"),
        py::arg("types") = py::none());
  m.def("inplace_allowed", [](const std::string& type, int input, int output) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    DOPPIO_ENFORCE_FOUND(schema != nullptr, "op type '", type, "' has no schema");
    return schema->inplace_allowed(input, output);
  });
  m.def("inplace_enforced", [](const std::string& type, int input, int output) {
    const OpSchema* schema = OpSchemaRegistry::Schema(type);
    DOPPIO_ENFORCE_FOUND(schema != nullptr, "op type '", type, "' has no schema");
    return schema->inplace_enforced(input, output);
  });
}

}  // namespace python
}  // namespace doppio
