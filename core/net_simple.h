// SimpleNet: runs ops one after another in the order of the NetDef, on the
// calling thread. The reference executor: every other one must give its
// results.
//
// Device streams (core/event_schedule.h): every async op runs on stream 0 of
// its device without a host sync; events order work across devices and
// before host ops that read it; Run() drains every stream it used and turns
// a failed kernel into a doppio::Error naming the op.
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
  ~SimpleNet() override;
  void Run() override;
  const std::vector<std::unique_ptr<OperatorBase>>& operators() const override {
    return operators_;
  }
  int intra_op_threads() const { return intra_op_threads_; }
  // Null when no op uses device streams.
  const StreamScheduler* stream_scheduler() const { return streams_.get(); }

 private:
  void RunWithStreams();

  std::vector<std::unique_ptr<OperatorBase>> operators_;
  std::unique_ptr<StreamScheduler> streams_;
  int intra_op_threads_ = 1;
};

}  // namespace doppio
