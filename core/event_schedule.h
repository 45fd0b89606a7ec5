// How the net executors order work on asynchronous devices (core/event.h):
// which op records an event, which op waits for which parent's event and
// whether on the device or on the host, and which streams a run must drain
// before it ends. Plain C++ over the AsyncBackend interface, shared by
// SimpleNet and DagNet and tested with a fake device (tests/core).
//
// The rules, for an op C and a parent P it depends on (core/net.h's
// OpDependencies: read after write, write after write, write after read,
// control inputs):
//   - P is not async (a host op, or a device op that syncs): P's work was
//     done when it returned. No wait.
//   - C is not async (a CPU op, or a device op that needs a host sync), or
//     C is on another backend: C's thread waits on the host for P's event.
//   - C is async on P's backend: C's stream waits on the device for P's
//     event, unless C runs on P's very stream, whose order already puts C
//     after P. With fixed streams (one stream per device: SimpleNet, a dag
//     net with one worker per device) that is known when the net is built;
//     with a dag's several workers per device it is decided at run time.
//   - P records its event after it runs iff some op may wait for it.
// At the end of a run, every stream that ran async work is drained: an
// event recorded on it is waited for on the host. A failure there becomes
// a doppio::Error naming the op whose work failed (found through the
// recorded events of the ops that ran on that stream).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/event.h"

namespace doppio {

enum class WaitMode : uint8_t {
  kHost,    // the waiting op's thread blocks until the parent's work is done
  kDevice,  // the waiting op's stream waits (skipped on the parent's stream)
};

struct ParentWait {
  int parent = 0;
  WaitMode mode = WaitMode::kHost;
};

// One stream device of a net: a (backend, device) pair its ops use.
struct StreamDevice {
  const AsyncBackend* backend = nullptr;
  int device = 0;
};

struct StreamPlan {
  // Per op: the parents whose events it waits for, ascending, and how.
  std::vector<std::vector<ParentWait>> waits;
  // Per op: whether it records its event after it runs (async ops only).
  std::vector<bool> records;
  // Per op: its index in `devices`, or -1 for a host op.
  std::vector<int> device_of_op;
  std::vector<StreamDevice> devices;
};

// The static part of the rules above. `parents[i]`: the ops op i depends on
// (each < i). `fixed_streams`: each device runs all its ops on one stream.
StreamPlan PlanStreams(const std::vector<std::vector<int>>& parents,
                       const std::vector<StreamPlacement>& placements, bool fixed_streams);

// The run-time part, owned by a net that has at least one op on streams.
// Thread-safety: BeforeOp/AfterOp may run on several threads at once,
// provided each (device, stream) is used by one thread at a time during a
// run and an op's AfterOp happens before its successors' BeforeOp (the dag
// net's dependency counters order them). BeginRun and FinishRun run on the
// net's calling thread, before and after all of them.
class StreamScheduler {
 public:
  // Names op `index` in messages ("op #3 FC 'fc1' ... in net 'train'").
  using Describe = std::function<std::string(int index)>;

  // `streams_per_device`: 1 for fixed streams, else the number of stream
  // ids (workers) an op may run on. Creates the events the plan needs.
  StreamScheduler(const std::vector<std::vector<int>>& parents,
                  std::vector<StreamPlacement> placements, int streams_per_device,
                  Describe describe);
  ~StreamScheduler();
  StreamScheduler(const StreamScheduler&) = delete;
  StreamScheduler& operator=(const StreamScheduler&) = delete;

  // True when some op of `placements` uses streams: only then does a net
  // need a scheduler (a CPU net runs exactly as before streams existed).
  static bool AnyOnStreams(const std::vector<StreamPlacement>& placements);

  const StreamPlan& plan() const { return plan_; }
  const StreamPlacement& placement(int op) const { return placements_[op]; }

  void BeginRun();
  // Waits, as planned, for the parents of `op`, which is about to run on
  // stream `stream_id`, and notes the stream for FinishRun. A failed parent
  // throws doppio::Error naming it.
  void BeforeOp(int op, int stream_id);
  // `op` ran on `stream_id`: records its event if planned.
  void AfterOp(int op, int stream_id);
  // Drains every stream that ran async work since BeginRun, so no work of
  // this run is still queued when it returns. With `report_failures`, a
  // failed stream throws doppio::Error naming the op; without, failures are
  // swallowed (the caller already has the run's first error).
  void FinishRun(bool report_failures);

 private:
  struct StreamState;
  StreamState& StreamOf(int device_index, int stream_id);
  std::string StreamLabel(int device_index, int stream_id) const;
  // The op whose work failed on a stream whose drain failed; `culprits`
  // gets it (or, when no recorded event shows the failure, the ops after
  // the last good one) and `error` its failure.
  void FindFailedOp(const StreamState& stream, std::vector<int>* culprits,
                    std::string* error) const;

  std::vector<StreamPlacement> placements_;
  StreamPlan plan_;
  const bool fixed_streams_;
  const int streams_per_device_;
  Describe describe_;
  // Per op: its event (null unless plan_.records) and the stream it last
  // ran on.
  std::vector<std::unique_ptr<AsyncEvent>> events_;
  std::vector<int> stream_of_op_;
  // devices x streams_per_device, made on first use.
  std::vector<std::unique_ptr<StreamState>> streams_;
};

}  // namespace doppio
