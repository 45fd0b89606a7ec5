// Nets: an executable NetDef bound to a workspace.
//
// CreateNet picks the executor from NetDef.type ("simple" by default) in the
// net registry. Every net applies its DeviceOption to ops that have none,
// creates all operators up front (so a bad op fails at creation, naming it),
// and, when the NetDef declares external inputs, checks that each op input is
// an external input or produced by an earlier op.
//
// Errors raised while running carry the op's index, type, name, blobs and the
// net's name. Thread-safety: one Run() at a time per net; set observers
// between runs, not during one.
//
// Device streams: when some op queues its work on an asynchronous device
// (OperatorBase::stream_placement(), core/event.h), the executor orders that
// work with a StreamScheduler (core/event_schedule.h) and Run() returns only
// once all of it is done. A net of host ops has no scheduler and runs its
// ops exactly as before streams existed.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/operator.h"
#include "proto/doppio.pb.h"

namespace doppio {

class StreamScheduler;
class Workspace;

// For each op of `net`, the earlier ops it must wait for (ascending, no
// duplicates): the last writer of each blob it reads or names in
// control_input (read after write), the last writer of each blob it writes
// (write after write), and every reader of such a blob since that writer
// (write after read). An op that reads and writes a blob (in place) does not
// depend on itself.
std::vector<std::vector<int>> OpDependencies(const NetDef& net);

class NetBase {
 public:
  // Called after each op with its index in the net and its wall time.
  using OpObserver = std::function<void(int op_index, const OperatorBase& op,
                                        double seconds)>;
  // The same report with the op's start time, for profilers and traces.
  struct OpEvent {
    int op_index = 0;
    const OperatorBase* op = nullptr;
    std::chrono::steady_clock::time_point start;
    double seconds = 0;
  };
  using OpEventObserver = std::function<void(const OpEvent& event)>;

  NetBase(const NetDef& def, Workspace* workspace);
  virtual ~NetBase();
  NetBase(const NetBase&) = delete;
  NetBase& operator=(const NetBase&) = delete;

  // Runs every op once; the first failure throws with the op's context.
  virtual void Run() = 0;
  virtual const std::vector<std::unique_ptr<OperatorBase>>& operators() const = 0;

  const std::string& name() const { return def_.name(); }
  const NetDef& def() const { return def_; }
  // One observer per net: setting either kind replaces the other; nullptr
  // removes it. Calls come from the thread that ran the op, right after it,
  // and are serialized: never two at once, even when an executor runs ops
  // concurrently.
  void SetOpObserver(OpObserver observer);
  void SetOpEventObserver(OpEventObserver observer) { observer_ = std::move(observer); }

 protected:
  // The op's definition as the net runs it (net device option applied).
  static OperatorDef EffectiveOpDef(const NetDef& net, const OperatorDef& op);
  // "op #3 FC 'fc1' (inputs [...], outputs [...]) in net 'train'"
  std::string DescribeOp(int index) const;
  // Creates the op at `index`, adding its context to any error.
  std::unique_ptr<OperatorBase> CreateOpAt(int index, Workspace* workspace) const;
  // Runs one op, timing it for the observer and adding context to errors.
  // With `streams`, on stream `stream_id`, after waiting for its parents'
  // device work and recording its own event as planned.
  void RunOpAt(int index, OperatorBase& op, StreamScheduler* streams = nullptr,
               int stream_id = 0) const;
  // RunOpAt's slower path, kept out of line so the host-only case stays a
  // plain call.
  void RunObservedOrOnStream(int index, OperatorBase& op, StreamScheduler* streams,
                             int stream_id) const;
  // A scheduler for `operators` when some of them use device streams, else
  // nullptr. `streams_per_device` as in StreamScheduler.
  std::unique_ptr<StreamScheduler> MakeStreamScheduler(
      const std::vector<std::unique_ptr<OperatorBase>>& operators,
      int streams_per_device) const;

  NetDef def_;
  OpEventObserver observer_;
  mutable std::mutex observer_mutex_;
};

using NetCreator =
    std::function<std::unique_ptr<NetBase>(const NetDef&, Workspace*)>;

class NetRegistry {
 public:
  static void Register(const std::string& type, NetCreator creator);
  static std::vector<std::string> Types();
  static const NetCreator* Find(const std::string& type);
};

std::unique_ptr<NetBase> CreateNet(const NetDef& def, Workspace* workspace);

// Each op's random generator state, in op order ("" for ops that drew
// nothing), and back: what a checkpoint saves so that a resumed net draws
// the numbers (dropout masks) an uninterrupted one would. Ops of nets
// nested in arguments (If, While, RecurrentNetwork) are not included. Not
// thread-safe against running the net. SetNetRandomStates throws, changing
// nothing, when the count differs from the net's ops or a state is not one.
std::vector<std::string> NetRandomStates(const NetBase& net);
void SetNetRandomStates(NetBase* net, const std::vector<std::string>& states);

struct NetRegisterer {
  NetRegisterer(const char* type, NetCreator creator) {
    NetRegistry::Register(type, std::move(creator));
  }
};

}  // namespace doppio
