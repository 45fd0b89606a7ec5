#include "core/net_simple.h"

#include <set>
#include <utility>

#include "core/event_schedule.h"
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
  // One stream per device: ops on one device are ordered by their stream.
  streams_ = MakeStreamScheduler(operators_, /*streams_per_device=*/1);
}

SimpleNet::~SimpleNet() = default;

void SimpleNet::Run() {
  ApplyIntraOpThreads(intra_op_threads_);
  if (streams_) {
    RunWithStreams();
    return;
  }
  for (size_t i = 0; i < operators_.size(); ++i) {
    RunOpAt(static_cast<int>(i), *operators_[i]);
  }
}

void SimpleNet::RunWithStreams() {
  streams_->BeginRun();
  try {
    for (size_t i = 0; i < operators_.size(); ++i) {
      RunOpAt(static_cast<int>(i), *operators_[i], streams_.get(), 0);
    }
  } catch (...) {
    // Nothing this run queued may still run once Run() has returned.
    streams_->FinishRun(/*report_failures=*/false);
    throw;
  }
  streams_->FinishRun(/*report_failures=*/true);
}

static NetRegisterer simple_net_registerer(
    "simple", [](const NetDef& def, Workspace* workspace) -> std::unique_ptr<NetBase> {
      return std::make_unique<SimpleNet>(def, workspace);
    });

}  // namespace doppio
