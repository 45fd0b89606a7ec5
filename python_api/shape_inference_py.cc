// Caffe2's workspace.InferShapesAndTypes: the shapes and dtypes a sequence
// of nets gives its blobs, from the schemas' inference functions (the walk
// of core/shape_walk.h), starting from given shapes or, when none are
// given, from the tensors of the current workspace (as Caffe2 does).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/enforce.h"
#include "core/shape_walk.h"
#include "core/workspace.h"
#include "proto/doppio.pb.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

std::map<std::string, TensorShape> GivenShapes(const py::dict& dims, const py::object& types) {
  std::map<std::string, TensorShape> shapes;
  for (const auto& item : dims) {
    const std::string name = py::str(item.first);
    TensorShape& shape = shapes[name];
    try {
      for (int64_t dim : item.second.cast<std::vector<int64_t>>()) shape.add_dims(dim);
    } catch (const py::cast_error&) {
      DOPPIO_THROW("InferShapesAndTypes: the shape of blob '", name, "' must be a list of ints");
    }
    shape.set_data_type(TensorProto::FLOAT);
  }
  if (!types.is_none()) {
    for (const auto& item : types.cast<py::dict>()) {
      const std::string name = py::str(item.first);
      const int dtype = item.second.cast<int>();
      DOPPIO_ENFORCE(TensorProto::DataType_IsValid(dtype), "InferShapesAndTypes: blob '", name,
                     "' has an invalid data type ", dtype);
      shapes[name].set_data_type(static_cast<TensorProto::DataType>(dtype));
    }
  }
  return shapes;
}

}  // namespace

void DefineShapeInference(py::module_& m, std::function<Workspace*()> current_workspace) {
  m.def(
      "infer_shapes_and_types",
      [current_workspace](const std::vector<py::bytes>& net_bytes, const py::object& dims,
                          const py::object& types) {
        std::map<std::string, TensorShape> shapes = dims.is_none()
                                                        ? WorkspaceShapes(*current_workspace())
                                                        : GivenShapes(dims.cast<py::dict>(), types);
        for (const py::bytes& bytes : net_bytes) {
          NetDef net;
          DOPPIO_ENFORCE(net.ParseFromString(std::string(bytes)),
                         "InferShapesAndTypes: a net is not a serialized NetDef");
          shapes = InferNetShapes(net, shapes);
        }
        py::dict result_shapes, result_types;
        for (const auto& [name, shape] : shapes) {
          result_shapes[py::str(name)] =
              std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
          result_types[py::str(name)] = static_cast<int>(shape.data_type());
        }
        return py::make_tuple(result_shapes, result_types);
      },
      py::arg("nets"), py::arg("blob_dimensions") = py::none(), py::arg("blob_types") = py::none());
}

}  // namespace python
}  // namespace doppio
