// SimpleNet: runs ops one after another in the order of the NetDef, on the
// calling thread. The reference executor: every other one must give its
// results.
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

 private:
  std::vector<std::unique_ptr<OperatorBase>> operators_;
};

}  // namespace doppio
