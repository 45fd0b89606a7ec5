// Operators: the units of work in a net.
//
// An operator is built from an OperatorDef inside a Workspace. Its
// constructor resolves every input and output blob once (inputs must exist;
// outputs are created) and reads its arguments once, so Run() does no
// lookups. Operator<Context> adds a device context and the Tensor
// shorthands Input(i) / Output(i); a kernel implements RunOnDevice().
//
// Streams (core/event.h): an op on an asynchronous device (CUDA) can queue
// its work on a stream and return before the work is done. Run() never does
// that: it waits for the work, so calling it directly is always safe. Nets
// use RunOnStream() with the op's stream_placement() and order the queued
// work with events (core/event_schedule.h). Host ops (CPU) take no part:
// nets call their Run() exactly as before.
//
// Ownership: the workspace owns the blobs; the operator holds borrowed
// pointers to them, valid while the workspace lives (nets are destroyed
// before their workspace's blobs).
// Thread-safety: one Run() or RunOnStream() at a time per operator.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/argument.h"
#include "core/blob.h"
#include "core/context.h"
#include "core/enforce.h"
#include "core/event.h"
#include "core/tensor.h"
#include "proto/doppio.pb.h"

namespace doppio {

class Workspace;

class OperatorBase {
 public:
  OperatorBase(const OperatorDef& def, Workspace* workspace);
  virtual ~OperatorBase() = default;
  OperatorBase(const OperatorBase&) = delete;
  OperatorBase& operator=(const OperatorBase&) = delete;

  // Does the op's work; failures throw doppio::Error. When it returns the
  // work is done, also on a device (stream 0 of it).
  virtual void Run() = 0;
  // Does the op's work on stream `stream_id` of its device (a net worker's
  // index). An op whose placement is async returns once its work is queued;
  // the caller must order that work with events (core/event_schedule.h).
  // Any other op returns with its work done, as from Run().
  virtual void RunOnStream(int /*stream_id*/) { Run(); }
  // Where the op's work goes (see StreamPlacement). Fixed for the op's life;
  // nets ask once, when they are created.
  virtual StreamPlacement stream_placement() const { return {}; }
  // The op's random generator state, for checkpoints ("" when it has none
  // or drew nothing yet; core/random_state.h). Not thread-safe against Run.
  virtual std::string RandomState() const { return ""; }
  virtual void SetRandomState(const std::string& /*state*/) {}

  const OperatorDef& def() const { return def_; }
  const std::string& type() const { return def_.type(); }
  // "FC 'fc1'" or "FC": how messages name this op.
  std::string DisplayName() const;

  int InputSize() const { return static_cast<int>(inputs_.size()); }
  int OutputSize() const { return static_cast<int>(outputs_.size()); }
  const std::string& input_name(int i) const { return def_.input(i); }
  const std::string& output_name(int i) const { return def_.output(i); }
  const Blob& InputBlob(int i) const { return *inputs_.at(i); }
  Blob* OutputBlob(int i) { return outputs_.at(i); }
  bool IsInputOutputAlias(int input, int output) const {
    return inputs_.at(input) == outputs_.at(output);
  }

  // Non-tensor inputs and outputs (DB cursors, store handlers ...).
  template <typename T>
  const T& InputAs(int i) const {
    const Blob& blob = InputBlob(i);
    DOPPIO_ENFORCE(blob.IsType<T>(), "input ", i, " ('", input_name(i),
                   "') should hold ", DemangledTypeName(typeid(T)), " but holds ",
                   blob.TypeName());
    return blob.Get<T>();
  }
  template <typename T>
  T* OutputAs(int i) {
    return OutputBlob(i)->GetMutable<T>();
  }

  bool HasArgument(const std::string& name) const { return args_.Has(name); }
  template <typename T>
  T GetSingleArgument(const std::string& name, const T& default_value) const {
    return args_.GetSingle<T>(name, default_value);
  }
  template <typename T>
  std::vector<T> GetRepeatedArgument(const std::string& name,
                                     const std::vector<T>& default_value = {}) const {
    return args_.GetRepeated<T>(name, default_value);
  }

  // For ops that create or look up blobs by name at run time (Load, Save).
  Workspace* workspace() const { return workspace_; }

 private:
  OperatorDef def_;
  ArgumentHelper args_{def_};
  Workspace* workspace_;
  std::vector<const Blob*> inputs_;
  std::vector<Blob*> outputs_;
};

// Whether a device context keeps a random generator whose state a
// checkpoint saves (CPUContext and CUDAContext do).
template <class C, class = void>
struct HasRandomState : std::false_type {};
template <class C>
struct HasRandomState<C, std::void_t<decltype(std::declval<const C&>().RandomState())>>
    : std::true_type {};

template <class Context>
class Operator : public OperatorBase {
 public:
  Operator(const OperatorDef& def, Workspace* workspace)
      : OperatorBase(def, workspace), context_(def.device_option()) {}

  void Run() final {
    context_.SwitchToDevice(0);
    RunOnDevice();
    context_.FinishDeviceComputation();
  }
  void RunOnStream(int stream_id) final {
    context_.SwitchToDevice(stream_id);
    RunOnDevice();
    // A compile-time no-op for host contexts, whose placement is constant.
    if (!context_.stream_placement().async || NeedsHostSync()) {
      context_.FinishDeviceComputation();
    }
  }
  StreamPlacement stream_placement() const final {
    StreamPlacement placement = context_.stream_placement();
    if (placement.async && NeedsHostSync()) placement.async = false;
    return placement;
  }
  virtual void RunOnDevice() = 0;
  // A context without a generator (a test's fake device) has no state.
  std::string RandomState() const final {
    if constexpr (HasRandomState<Context>::value) return context_.RandomState();
    return "";
  }
  void SetRandomState(const std::string& state) final {
    if constexpr (HasRandomState<Context>::value) context_.SetRandomState(state);
  }

  // The escape hatch from asynchronous execution, for device op types that
  // read device data on the host, write host memory that the next op reads
  // at once, or queue work outside their stream in a way events cannot
  // order: returning true makes nets wait on the host for the op's parents
  // and the op wait for its own stream before it returns (the behaviour of
  // every device op before streams).
  virtual bool NeedsHostSync() const { return false; }

 protected:
  // Input i as a tensor; a clear error if the blob holds anything else.
  const Tensor& Input(int i) const {
    const Blob& blob = InputBlob(i);
    DOPPIO_ENFORCE(blob.IsTensor(), "input ", i, " ('", input_name(i),
                   "') should be a tensor but holds ", blob.TypeName());
    return blob.GetTensor();
  }
  // Output i as a tensor on this op's device.
  Tensor* Output(int i) { return OutputBlob(i)->GetMutableTensor(context_.device()); }

  Context context_;
};

}  // namespace doppio
