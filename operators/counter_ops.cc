#include "operators/counter_ops.h"

#include <memory>
#include <string>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

int64_t InitCount(const OperatorBase& op) {
  const int64_t count = op.GetSingleArgument<int64_t>("init_count", 0);
  DOPPIO_ENFORCE(count >= 0, "init_count must not be negative, got ", count);
  return count;
}

Counter& CounterOf(const OperatorBase& op) {
  const Blob& blob = op.InputBlob(0);
  DOPPIO_ENFORCE(blob.IsType<Counter>(), "the blob '", op.input_name(0), "' holds ",
                 blob.TypeName(), ", not a counter (make it with CreateCounter)");
  // The counter's state is atomic: stepping it through a const blob is the
  // op's purpose, and concurrent nets do it at once.
  return const_cast<Counter&>(blob.Get<Counter>());
}

template <typename T>
void SetHostScalar(OperatorBase* op, int index, T value) {
  Tensor* output = op->OutputBlob(index)->GetMutableTensor();
  output->Resize({});
  *output->mutable_data<T>() = value;
}

}  // namespace

CreateCounterOp::CreateCounterOp(const OperatorDef& def, Workspace* workspace)
    : OperatorBase(def, workspace), init_count_(InitCount(*this)) {}

void CreateCounterOp::Run() { OutputBlob(0)->Reset(std::make_unique<Counter>(init_count_)); }

ResetCounterOp::ResetCounterOp(const OperatorDef& def, Workspace* workspace)
    : OperatorBase(def, workspace), init_count_(InitCount(*this)) {}

void ResetCounterOp::Run() {
  const int64_t previous = CounterOf(*this).Reset(init_count_);
  if (OutputSize() == 1) SetHostScalar<int64_t>(this, 0, previous);
}

CounterStepOp::CounterStepOp(const OperatorDef& def, Workspace* workspace)
    : OperatorBase(def, workspace),
      step_(def.type() == "CountDown"          ? Step::kCountDown
            : def.type() == "CheckCounterDone" ? Step::kCheckDone
            : def.type() == "CountUp"          ? Step::kCountUp
                                               : Step::kRetrieve) {}

void CounterStepOp::Run() {
  Counter& counter = CounterOf(*this);
  switch (step_) {
    case Step::kCountDown:
      return SetHostScalar<bool>(this, 0, counter.CountDown());
    case Step::kCheckDone:
      return SetHostScalar<bool>(this, 0, counter.Done());
    case Step::kCountUp:
      return SetHostScalar<int64_t>(this, 0, counter.CountUp());
    case Step::kRetrieve:
      return SetHostScalar<int64_t>(this, 0, counter.Retrieve());
  }
}

REGISTER_CPU_OPERATOR(CreateCounter, CreateCounterOp);
REGISTER_CPU_OPERATOR(ResetCounter, ResetCounterOp);
REGISTER_CPU_OPERATOR(CountDown, CounterStepOp);
REGISTER_CPU_OPERATOR(CheckCounterDone, CounterStepOp);
REGISTER_CPU_OPERATOR(CountUp, CounterStepOp);
REGISTER_CPU_OPERATOR(RetrieveCount, CounterStepOp);

OPERATOR_SCHEMA(CreateCounter)
    .NumInputs(0)
    .NumOutputs(1)
    .Arg("init_count", "int64 >= 0: the starting count (default 0)")
    .Output(0, "counter", "a new counter")
    .Doc("Makes a counter shared by the nets that use the blob.");

OPERATOR_SCHEMA(ResetCounter)
    .NumInputs(1)
    .NumOutputs(0, 1)
    .Arg("init_count", "int64 >= 0: the new count (default 0)")
    .Input(0, "counter", "a counter (CreateCounter)")
    .Output(0, "previous", "int64 scalar: the count before (optional)")
    .Doc("Sets a counter back to init_count.");

OPERATOR_SCHEMA(CountDown)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "counter", "a counter (CreateCounter)")
    .Output(0, "done", "bool scalar: whether the count was already <= 0")
    .Doc("Decrements a counter atomically.");

OPERATOR_SCHEMA(CheckCounterDone)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "counter", "a counter (CreateCounter)")
    .Output(0, "done", "bool scalar: whether the count is <= 0")
    .Doc("Whether a counter has counted down to zero.");

OPERATOR_SCHEMA(CountUp)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "counter", "a counter (CreateCounter)")
    .Output(0, "previous", "int64 scalar: the count before")
    .Doc("Increments a counter atomically.");

OPERATOR_SCHEMA(RetrieveCount)
    .NumInputs(1)
    .NumOutputs(1)
    .Input(0, "counter", "a counter (CreateCounter)")
    .Output(0, "count", "int64 scalar: the current count")
    .Doc("Reads a counter.");

SHOULD_NOT_DO_GRADIENT(CreateCounter, "a counter is state, not a value");
SHOULD_NOT_DO_GRADIENT(ResetCounter, "a counter is state, not a value");
SHOULD_NOT_DO_GRADIENT(CountDown, "a counter is state, not a value");
SHOULD_NOT_DO_GRADIENT(CheckCounterDone, "a counter is state, not a value");
SHOULD_NOT_DO_GRADIENT(CountUp, "a counter is state, not a value");
SHOULD_NOT_DO_GRADIENT(RetrieveCount, "a counter is state, not a value");

}  // namespace doppio
