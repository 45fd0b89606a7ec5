// doppio._C's workspaces: Caffe2's process-wide set of named workspaces with
// one current workspace, the blobs and nets listed in it.
#include "python_api/bindings.h"

#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/workspace.h"

namespace py = pybind11;

namespace doppio {
namespace python {

WorkspaceRegistry& Registry() {
  static auto* registry = new WorkspaceRegistry();
  return *registry;
}

Workspace* WorkspaceRegistry::Current() {
  auto& slot = workspaces[current];
  if (!slot) slot = std::make_unique<Workspace>();
  return slot.get();
}

namespace {

void SwitchWorkspace(const std::string& name, bool create_if_missing) {
  auto& registry = Registry();
  // The current workspace exists even before first use (Caffe2 lists it),
  // so a script can switch away from it and back.
  registry.Current();
  if (!registry.workspaces.count(name)) {
    DOPPIO_ENFORCE(create_if_missing, "workspace '", name,
                   "' does not exist (pass create_if_missing=True to make it)");
    registry.workspaces[name] = std::make_unique<Workspace>();
  }
  registry.current = name;
}

// Caffe2's reset_workspace(root_folder): a fresh workspace, optionally with
// the root folder its db ops resolve relative paths against.
void ResetWorkspace(const std::optional<std::string>& root_folder) {
  auto& registry = Registry();
  auto fresh = std::make_unique<Workspace>();
  if (root_folder) fresh->SetRootFolder(*root_folder);
  registry.workspaces[registry.current] = std::move(fresh);
}

}  // namespace

void DefineWorkspaces(py::module_& m) {
  m.def("switch_workspace", &SwitchWorkspace, py::arg("name"),
        py::arg("create_if_missing") = false);
  m.def("current_workspace", [] { return Registry().current; });
  m.def("workspaces", [] {
    std::vector<std::string> names;
    for (const auto& entry : Registry().workspaces) names.push_back(entry.first);
    return names;
  });
  m.def("reset_workspace", &ResetWorkspace, py::arg("root_folder") = py::none());
  m.def("root_folder", [] { return Registry().Current()->RootFolder(); });
  m.def("has_blob", [](const std::string& name) { return Registry().Current()->HasBlob(name); });
  m.def("create_blob", [](const std::string& name) {
    Registry().Current()->CreateBlob(name);
    return true;
  });
  m.def("blobs", [] { return Registry().Current()->Blobs(); });
  m.def("remove_blob", [](const std::string& name) { return Registry().Current()->RemoveBlob(name); });
  m.def("nets", [] { return Registry().Current()->Nets(); });
  m.def("delete_net", [](const std::string& name) { return Registry().Current()->DeleteNet(name); });
}

}  // namespace python
}  // namespace doppio
