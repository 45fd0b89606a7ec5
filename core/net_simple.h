// SimpleNet: runs ops one after another in the order of the NetDef, on the
// calling thread. The reference executor: every other one must give its
// results.
//
// Intra-op threads (core/intra_op_threads.h) are applied on the calling
// thread at each Run(). The default divides the cores by the number of
// devices the net's ops use, as a dag net with one worker per device does,
// so switching executors does not change how fast each op runs.
#pragma once

#include <memory>
#include <vector>

#include "core/net.h"

namespace doppio {

class SimpleNet final : public NetBase {
 public:
  SimpleNet(const NetDef& def, Workspace* workspace);
  void Run() override;
  const std::vector<std::unique_ptr<OperatorBase>>& operators() const override {
    return operators_;
  }
  int intra_op_threads() const { return intra_op_threads_; }

 private:
  std::vector<std::unique_ptr<OperatorBase>> operators_;
  int intra_op_threads_ = 1;
};

}  // namespace doppio
