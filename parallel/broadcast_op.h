// Broadcast over per-device CPU blobs in one process: copies the root
// device's tensor into every other device's blob (device 0's initialized
// parameters to the other replicas).
#pragma once

#include "core/operator.h"

namespace doppio {

class BroadcastOp final : public Operator<CPUContext> {
 public:
  BroadcastOp(const OperatorDef& def, Workspace* workspace);
  void RunOnDevice() override;

 private:
  int root_;
};

}  // namespace doppio
