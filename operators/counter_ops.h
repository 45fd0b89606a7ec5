// Caffe2's counter ops: a shared int64 counter kept in a blob, made by
// CreateCounter and stepped by CountDown / CountUp from any number of
// concurrently running nets (net_builder's multi-instance tasks use one to
// share work).
//
// Thread-safety: a Counter's operations are atomic; the blob holding it is
// written only by CreateCounter.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/operator.h"

namespace doppio {

class Counter {
 public:
  explicit Counter(int64_t count) : count_(count) {}
  // Decrements; true when the count was already <= 0 (nothing left).
  bool CountDown() { return count_.fetch_sub(1) <= 0; }
  // Increments; the value before.
  int64_t CountUp() { return count_.fetch_add(1); }
  int64_t Retrieve() const { return count_.load(); }
  bool Done() const { return count_.load() <= 0; }
  // Sets a new count; the value before.
  int64_t Reset(int64_t count) { return count_.exchange(count); }

 private:
  std::atomic<int64_t> count_;
};

// Output: a new Counter at init_count (>= 0).
class CreateCounterOp final : public OperatorBase {
 public:
  CreateCounterOp(const OperatorDef& def, Workspace* workspace);
  void Run() override;

 private:
  int64_t init_count_;
};

// Input: a Counter, set back to init_count; output (optional): the count it
// had, an int64 scalar.
class ResetCounterOp final : public OperatorBase {
 public:
  ResetCounterOp(const OperatorDef& def, Workspace* workspace);
  void Run() override;

 private:
  int64_t init_count_;
};

// Input: a Counter; output: a host scalar from one of its operations
// (CountDown, CheckCounterDone: bool; CountUp, RetrieveCount: int64).
class CounterStepOp final : public OperatorBase {
 public:
  CounterStepOp(const OperatorDef& def, Workspace* workspace);
  void Run() override;

 private:
  enum class Step { kCountDown, kCheckDone, kCountUp, kRetrieve };
  Step step_;  // from the op type, once
};

}  // namespace doppio
