// The registration functions of doppio._C, one per file by concern; module.cc
// calls them all from PYBIND11_MODULE. Each file binds one part of the
// runtime and keeps its helpers to itself.
//
// Thread-safety: everything here runs with the GIL held, except where a
// binding releases it around a call into the runtime (nets, plans, passes).
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/workspace.h"

namespace doppio {
namespace python {

namespace py = pybind11;

// The process's workspaces, by name, and which one is current (Caffe2's
// model). Owns the workspaces; guarded by the GIL.
struct WorkspaceRegistry {
  std::map<std::string, std::unique_ptr<Workspace>> workspaces;
  std::string current = "default";
  // The current workspace, created on first use.
  Workspace* Current();
};

// The one registry of the process (never destroyed: nets may still run in
// other threads at exit).
WorkspaceRegistry& Registry();

// errors_py.cc: the Python exception types of doppio::Error's kinds and the
// translator that raises them.
void DefineErrors(py::module_& m);
// workspace_py.cc: switch/reset workspaces, list and remove blobs and nets.
void DefineWorkspaces(py::module_& m);
// blobs_py.cc: feed and fetch blobs, tensor views, blob (de)serialization.
void DefineBlobs(py::module_& m);
// nets_py.cc: run operators, nets and plans; nets' random states.
void DefineNets(py::module_& m);
// gradients_py.cc: gradient defs of an op, the backward pass of a net.
void DefineGradients(py::module_& m);
// schemas_py.cc: registered operators, schemas, in-place rules, net cost.
void DefineSchemas(py::module_& m);
// memonger_py.cc: the memonger passes and the CPU allocator's statistics.
void DefineMemonger(py::module_& m);
// cross_device_py.cc
void DefineCrossDeviceCopies(py::module_& m);
// parallelize_py.cc
void DefineParallelize(py::module_& m);
// engine_pref_py.cc
void DefineEnginePref(py::module_& m);
// capabilities_py.cc
void DefineCapabilities(py::module_& m);
// python_op.cc and gradient_maker_py.cc: ops and gradient makers written in
// Python.
void DefinePythonOps(py::module_& m);
void DefinePythonGradients(py::module_& m);
// shape_inference_py.cc
void DefineShapeInference(py::module_& m, std::function<Workspace*()> current_workspace);
// transforms_py.cc
void DefineTransforms(py::module_& m, std::function<Workspace*()> current_workspace);
// db_py.cc
void DefineDB(py::module_& m);

}  // namespace python
}  // namespace doppio
