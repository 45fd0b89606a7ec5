#include "core/net_simple.h"

namespace doppio {

SimpleNet::SimpleNet(const NetDef& def, Workspace* workspace)
    : NetBase(def, workspace) {
  operators_.reserve(def_.op_size());
  for (int i = 0; i < def_.op_size(); ++i) {
    operators_.push_back(CreateOpAt(i, workspace));
  }
}

void SimpleNet::Run() {
  for (size_t i = 0; i < operators_.size(); ++i) {
    RunOpAt(static_cast<int>(i), *operators_[i]);
  }
}

static NetRegisterer simple_net_registerer(
    "simple", [](const NetDef& def, Workspace* workspace) -> std::unique_ptr<NetBase> {
      return std::make_unique<SimpleNet>(def, workspace);
    });

}  // namespace doppio
