// doppio._C's gradients: one op's gradient defs and the backward pass of a
// whole net, from the C++ gradient makers.
#include "python_api/bindings.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/backward.h"
#include "core/gradient.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

// (gradient op bytes, gradient blob per input: a name, (indices, values) or None)
py::tuple GetGradientDefs(const py::bytes& op_bytes, const std::vector<py::object>& output_grads) {
  const OperatorDef def = ParseProto<OperatorDef>(op_bytes, "OperatorDef");
  std::vector<GradientWrapper> wrappers;
  for (const py::object& grad : output_grads) {
    GradientWrapper wrapper;
    if (py::isinstance<py::str>(grad)) {
      wrapper.dense = grad.cast<std::string>();
    } else if (py::isinstance<py::tuple>(grad)) {
      auto pair = grad.cast<std::pair<std::string, std::string>>();
      wrapper.indices = pair.first;
      wrapper.values = pair.second;
    } else {
      DOPPIO_ENFORCE(grad.is_none(), "output gradients must be str, (indices, values) or None");
    }
    wrappers.push_back(wrapper);
  }
  const GradientOpsMeta meta = GetGradientForOp(def, wrappers);
  py::list ops;
  for (const OperatorDef& op : meta.ops) ops.append(SerializeProto(op));
  py::list input_grads;
  for (const GradientWrapper& grad : meta.input_gradients) {
    if (grad.IsDense()) {
      input_grads.append(py::str(grad.dense));
    } else if (grad.IsSparse()) {
      input_grads.append(py::make_tuple(grad.indices, grad.values));
    } else {
      input_grads.append(py::none());
    }
  }
  return py::make_tuple(ops, input_grads);
}

// The backward pass of a serialized NetDef: (gradient op bytes, blob ->
// gradient), a gradient being a str or an (indices, values) tuple.
py::tuple AddGradientOperatorsPy(const py::bytes& net_bytes, const std::vector<std::string>& losses,
                                 const py::object& loss_grads) {
  const NetDef net = ParseProto<NetDef>(net_bytes, "NetDef");
  std::map<std::string, GradientWrapper> initial;
  if (!loss_grads.is_none()) {
    DOPPIO_ENFORCE(py::isinstance<py::dict>(loss_grads),
                   "add_gradient_operators: loss_grads must be a dict loss -> gradient or None");
    for (const auto& item : loss_grads.cast<py::dict>()) {
      const std::string loss = py::str(item.first);
      const py::handle grad = item.second;
      GradientWrapper wrapper;
      if (py::isinstance<py::str>(grad)) {
        wrapper.dense = grad.cast<std::string>();
      } else if (py::isinstance<py::tuple>(grad) || py::isinstance<py::list>(grad)) {
        auto pair = grad.cast<std::vector<std::string>>();
        DOPPIO_ENFORCE(pair.size() == 2, "add_gradient_operators: the gradient of loss '", loss,
                       "' must be a name or (indices, values)");
        wrapper.indices = pair[0];
        wrapper.values = pair[1];
      } else {
        DOPPIO_ENFORCE(grad.is_none(), "add_gradient_operators: the gradient of loss '", loss,
                       "' must be str, (indices, values) or None");
      }
      initial[loss] = wrapper;
    }
  }
  BackwardResult result;
  {
    py::gil_scoped_release release;
    result = AddGradientOperators(net, losses, initial);
  }
  py::list ops;
  for (const OperatorDef& op : result.ops) ops.append(SerializeProto(op));
  py::dict gradients;
  for (const auto& entry : result.gradients) {
    const GradientWrapper& grad = entry.second;
    if (grad.IsDense()) {
      gradients[py::str(entry.first)] = py::str(grad.dense);
    } else {
      gradients[py::str(entry.first)] = py::make_tuple(grad.indices, grad.values);
    }
  }
  return py::make_tuple(ops, gradients);
}

}  // namespace

void DefineGradients(py::module_& m) {
  m.def("get_gradient_defs", &GetGradientDefs, py::arg("op_def"), py::arg("output_grads"));
  m.def("add_gradient_operators", &AddGradientOperatorsPy, py::arg("net_def"), py::arg("losses"),
        py::arg("loss_grads") = py::none());
}

}  // namespace python
}  // namespace doppio
