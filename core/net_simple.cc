#include "core/net_simple.h"

#include <set>
#include <utility>

#include "core/intra_op_threads.h"

namespace doppio {

SimpleNet::SimpleNet(const NetDef& def, Workspace* workspace)
    : NetBase(def, workspace) {
  operators_.reserve(def_.op_size());
  for (int i = 0; i < def_.op_size(); ++i) {
    operators_.push_back(CreateOpAt(i, workspace));
  }
  std::set<std::pair<int, int>> devices;
  for (const OperatorDef& op : def_.op()) {
    devices.emplace(op.device_option().device_type(), op.device_option().cuda_gpu_id());
  }
  intra_op_threads_ = IntraOpThreadsForNet(def_, static_cast<int>(devices.size()));
}

void SimpleNet::Run() {
  ApplyIntraOpThreads(intra_op_threads_);
  for (size_t i = 0; i < operators_.size(); ++i) {
    RunOpAt(static_cast<int>(i), *operators_[i]);
  }
}

static NetRegisterer simple_net_registerer(
    "simple", [](const NetDef& def, Workspace* workspace) -> std::unique_ptr<NetBase> {
      return std::make_unique<SimpleNet>(def, workspace);
    });

}  // namespace doppio
