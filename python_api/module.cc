// doppio._C: the Python extension. It keeps Caffe2's model of a process-wide
// set of named workspaces with one current workspace, and exchanges protos
// as serialized bytes (Python holds them as protobuf messages). Each concern
// binds itself in a file of its own (python_api/bindings.h lists them).
//
// Every doppio::Error surfaces as the Python type of its kind (errors_py.cc),
// each a RuntimeError as in Caffe2. Calls that run nets or operators release
// the GIL.
#include <pybind11/pybind11.h>

#include "parallel/gloo/gloo_common.h"
#include "python_api/bindings.h"

namespace doppio {
namespace python {

PYBIND11_MODULE(_C, m) {
  m.doc() = "Doppio's C++ runtime";
  DefineErrors(m);
  DefineWorkspaces(m);
  DefineBlobs(m);
  DefineNets(m);
  DefineGradients(m);
  DefineSchemas(m);
  DefineParallelize(m);
  DefineEnginePref(m);
  DefinePythonOps(m);
  DefinePythonGradients(m);
  DefineMemonger(m);
  DefineCrossDeviceCopies(m);
  DefineTransforms(m, [] { return Registry().Current(); });
  DefineDB(m);
  DefineCapabilities(m);
  DefineShapeInference(m, [] { return Registry().Current(); });
  m.def("drain_common_worlds", &DrainCommonWorlds, py::call_guard<py::gil_scoped_release>(),
        "Waits (each at most its timeout) until every rank of every live Gloo common world "
        "reaches this call; returns how many failed. Registered with atexit by doppio.");
}

}  // namespace python
}  // namespace doppio
