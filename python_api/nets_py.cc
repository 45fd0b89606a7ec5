// doppio._C's execution: operators, nets and plans run in the current
// workspace without the GIL, and the nets' random generator states.
#include "python_api/bindings.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "core/net.h"
#include "core/workspace.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

void RunOperatorOnce(const py::bytes& op_bytes) {
  const OperatorDef def = ParseProto<OperatorDef>(op_bytes, "OperatorDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunOperatorOnce(def);
}

void RunNetOnce(const py::bytes& net_bytes) {
  const NetDef def = ParseProto<NetDef>(net_bytes, "NetDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunNetOnce(def);
}

void CreateNet(const py::bytes& net_bytes, bool overwrite) {
  const NetDef def = ParseProto<NetDef>(net_bytes, "NetDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->CreateNet(def, overwrite);
}

// A PlanDef runs to completion (or its first error) without the GIL, so
// Python threads (e.g. one feeding data) keep running beside it.
void RunPlan(const py::bytes& plan_bytes) {
  const PlanDef def = ParseProto<PlanDef>(plan_bytes, "PlanDef");
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  workspace->RunPlan(def);
}

void RunNet(const std::string& name, int num_iter) {
  DOPPIO_ENFORCE_ARG(num_iter >= 0, "num_iter must be >= 0, got ", num_iter);
  Workspace* workspace = Registry().Current();
  py::gil_scoped_release release;
  for (int i = 0; i < num_iter; ++i) workspace->RunNet(name);
}

NetBase* NetNamed(const std::string& name) {
  NetBase* net = Registry().Current()->GetNet(name);
  DOPPIO_ENFORCE_FOUND(net != nullptr, "no net named '", name, "' (create it first)");
  return net;
}

std::vector<py::bytes> GetNetRandomStates(const std::string& name) {
  std::vector<py::bytes> states;
  for (const std::string& state : NetRandomStates(*NetNamed(name))) states.emplace_back(state);
  return states;
}

void SetNetRandomStatesFromPython(const std::string& name, const std::vector<std::string>& states) {
  SetNetRandomStates(NetNamed(name), states);
}

}  // namespace

void DefineNets(py::module_& m) {
  m.def("run_operator_once", &RunOperatorOnce, py::arg("op_def"));
  m.def("run_net_once", &RunNetOnce, py::arg("net_def"));
  m.def("create_net", &CreateNet, py::arg("net_def"), py::arg("overwrite") = false);
  m.def("run_net", &RunNet, py::arg("name"), py::arg("num_iter") = 1);
  // Each op's random generator state (core/net.h), for checkpoints.
  m.def("net_random_states", &GetNetRandomStates, py::arg("name"));
  m.def("set_net_random_states", &SetNetRandomStatesFromPython, py::arg("name"),
        py::arg("states"));
  m.def("run_plan", &RunPlan, py::arg("plan_def"));
}

}  // namespace python
}  // namespace doppio
