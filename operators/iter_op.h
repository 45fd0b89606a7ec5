// Iteration counters for training: Iter increments an int64 counter in place;
// AtomicIter does the same under a mutex made by CreateMutex, so concurrent
// nets (Hogwild) can share one counter.
#pragma once

#include <memory>
#include <mutex>

#include "core/operator.h"

namespace doppio {

// What CreateMutex stores in its blob; the type (and its serialized name)
// follow Caffe2, so checkpoints that include the mutex blob load.
using MutexPointer = std::unique_ptr<std::mutex>;

// Iter([iter]) -> iter. Without an input (the deprecated Caffe2 form) a blob
// that holds no tensor starts at 0; either way the counter then goes up by one.
class IterOp final : public Operator<CPUContext> {
 public:
  IterOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;
};

// AtomicIter(mutex, iter) -> iter, incremented while holding the mutex.
class AtomicIterOp final : public Operator<CPUContext> {
 public:
  AtomicIterOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;
};

// CreateMutex() -> mutex: a blob holding a new MutexPointer.
class CreateMutexOp final : public Operator<CPUContext> {
 public:
  CreateMutexOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(def, workspace) {}
  void RunOnDevice() override;
};

}  // namespace doppio
