#include "core/operator.h"

#include "core/workspace.h"

namespace doppio {

OperatorBase::OperatorBase(const OperatorDef& def, Workspace* workspace)
    : def_(def), workspace_(workspace) {
  DOPPIO_ENFORCE(workspace != nullptr, "an operator needs a workspace");
  inputs_.reserve(def_.input_size());
  for (const std::string& name : def_.input()) {
    const Blob* blob = workspace->GetBlob(name);
    DOPPIO_ENFORCE(blob != nullptr, "input blob '", name,
                   "' does not exist in the workspace (feed it, or run the net "
                   "that produces it first)");
    inputs_.push_back(blob);
  }
  outputs_.reserve(def_.output_size());
  for (const std::string& name : def_.output()) {
    outputs_.push_back(workspace->CreateBlob(name));
  }
}

std::string OperatorBase::DisplayName() const {
  if (def_.name().empty()) return def_.type();
  return MakeString(def_.type(), " '", def_.name(), "'");
}

}  // namespace doppio
