#include "core/event_schedule.h"

#include <algorithm>
#include <utility>

#include "core/enforce.h"

namespace doppio {
namespace {

bool SameStreamDevice(const StreamPlacement& a, const StreamPlacement& b) {
  return a.backend == b.backend && a.device == b.device;
}

}  // namespace

StreamPlan PlanStreams(const std::vector<std::vector<int>>& parents,
                       const std::vector<StreamPlacement>& placements, bool fixed_streams) {
  const int num_ops = static_cast<int>(placements.size());
  DOPPIO_ENFORCE(parents.size() == placements.size(), "PlanStreams: ", parents.size(),
                 " dependency lists for ", num_ops, " ops");
  StreamPlan plan;
  plan.waits.resize(num_ops);
  plan.records.assign(num_ops, false);
  plan.device_of_op.assign(num_ops, -1);
  for (int i = 0; i < num_ops; ++i) {
    const StreamPlacement& op = placements[i];
    if (!op.on_streams()) continue;
    int index = 0;
    while (
        index < static_cast<int>(plan.devices.size()) &&
        !(plan.devices[index].backend == op.backend && plan.devices[index].device == op.device)) {
      ++index;
    }
    if (index == static_cast<int>(plan.devices.size())) {
      plan.devices.push_back({op.backend, op.device});
    }
    plan.device_of_op[i] = index;
  }

  for (int child = 0; child < num_ops; ++child) {
    const StreamPlacement& consumer = placements[child];
    for (int parent : parents[child]) {
      DOPPIO_ENFORCE(parent >= 0 && parent < child, "PlanStreams: op ", child, " depends on op ",
                     parent, ", which does not run before it");
      const StreamPlacement& producer = placements[parent];
      if (!producer.is_async()) continue;
      ParentWait wait;
      wait.parent = parent;
      if (!consumer.is_async() || consumer.backend != producer.backend) {
        wait.mode = WaitMode::kHost;
      } else if (fixed_streams && SameStreamDevice(consumer, producer)) {
        continue;  // the same stream: its order is enough
      } else {
        wait.mode = WaitMode::kDevice;
      }
      plan.waits[child].push_back(wait);
      plan.records[parent] = true;
    }
  }
  return plan;
}

// What one (device, stream) did in the current run. Touched by the one
// thread that runs that stream's ops, then by FinishRun.
struct StreamScheduler::StreamState {
  int device_index = 0;
  int stream_id = 0;
  bool used = false;
  // Async ops launched on this stream this run, in launch order.
  std::vector<int> launched;
  // Recorded at the end of a run to wait for everything queued here.
  std::unique_ptr<AsyncEvent> drain;
};

StreamScheduler::StreamScheduler(const std::vector<std::vector<int>>& parents,
                                 std::vector<StreamPlacement> placements, int streams_per_device,
                                 Describe describe)
    : placements_(std::move(placements)),
      fixed_streams_(streams_per_device == 1),
      streams_per_device_(streams_per_device),
      describe_(std::move(describe)) {
  DOPPIO_ENFORCE(streams_per_device >= 1, "StreamScheduler: ", streams_per_device,
                 " streams per device");
  plan_ = PlanStreams(parents, placements_, fixed_streams_);
  const int num_ops = static_cast<int>(placements_.size());
  events_.resize(num_ops);
  stream_of_op_.assign(num_ops, 0);
  for (int i = 0; i < num_ops; ++i) {
    if (!plan_.records[i]) continue;
    try {
      events_[i] = placements_[i].backend->CreateEvent(placements_[i].device);
    } catch (Error& error) {
      error.AppendContext("while creating the event of " + describe_(i));
      throw;
    }
  }
  const int num_devices = static_cast<int>(plan_.devices.size());
  streams_.reserve(static_cast<size_t>(num_devices) * streams_per_device_);
  for (int device = 0; device < num_devices; ++device) {
    for (int stream = 0; stream < streams_per_device_; ++stream) {
      auto state = std::make_unique<StreamState>();
      state->device_index = device;
      state->stream_id = stream;
      streams_.push_back(std::move(state));
    }
  }
}

StreamScheduler::~StreamScheduler() = default;

bool StreamScheduler::AnyOnStreams(const std::vector<StreamPlacement>& placements) {
  return std::any_of(placements.begin(), placements.end(),
                     [](const StreamPlacement& p) { return p.on_streams(); });
}

StreamScheduler::StreamState& StreamScheduler::StreamOf(int device_index, int stream_id) {
  DOPPIO_ENFORCE(stream_id >= 0 && stream_id < streams_per_device_, "stream ", stream_id,
                 " is out of range: this net uses ", streams_per_device_, " stream(s) per device");
  return *streams_[static_cast<size_t>(device_index) * streams_per_device_ + stream_id];
}

std::string StreamScheduler::StreamLabel(int device_index, int stream_id) const {
  const StreamDevice& device = plan_.devices[device_index];
  return MakeString(device.backend->name(), " device ", device.device, " stream ", stream_id);
}

void StreamScheduler::BeginRun() {
  for (auto& stream : streams_) {
    stream->used = false;
    stream->launched.clear();
  }
}

void StreamScheduler::BeforeOp(int op, int stream_id) {
  const StreamPlacement& consumer = placements_[op];
  if (consumer.on_streams()) {
    // Noted before the op runs: if it fails after queuing some work (or a
    // wait below), FinishRun must still drain its stream.
    StreamState& stream = StreamOf(plan_.device_of_op[op], stream_id);
    stream.used = true;
    if (consumer.async) {
      stream_of_op_[op] = stream_id;
      stream.launched.push_back(op);
    }
  }
  for (const ParentWait& wait : plan_.waits[op]) {
    const AsyncEvent& event = *events_[wait.parent];
    if (wait.mode == WaitMode::kDevice) {
      const bool same_stream = plan_.device_of_op[wait.parent] == plan_.device_of_op[op] &&
                               stream_of_op_[wait.parent] == stream_id;
      if (!same_stream) event.Block(consumer.device, stream_id);
      continue;
    }
    try {
      event.Synchronize();
    } catch (Error& error) {
      error.AppendContext("in the device work of " + describe_(wait.parent) +
                          ", which this op waited for on the host");
      throw;
    }
  }
}

void StreamScheduler::AfterOp(int op, int stream_id) {
  if (plan_.records[op]) events_[op]->Record(stream_id);
}

void StreamScheduler::FindFailedOp(const StreamState& stream, std::vector<int>* culprits,
                                   std::string* error) const {
  // Ops without an event since the last op whose work is known good: the
  // failure is in one of them when no later recorded event shows it.
  std::vector<int> unrecorded;
  for (int op : stream.launched) {
    if (!plan_.records[op]) {
      unrecorded.push_back(op);
      continue;
    }
    try {
      events_[op]->Synchronize();
      unrecorded.clear();
    } catch (const std::exception& failure) {
      *culprits = std::move(unrecorded);
      culprits->push_back(op);
      *error = failure.what();
      return;
    }
  }
  *culprits = std::move(unrecorded);
}

void StreamScheduler::FinishRun(bool report_failures) {
  struct Failure {
    const StreamState* stream;
    std::string message;
  };
  std::vector<Failure> failures;
  for (auto& state : streams_) {
    if (!state->used) continue;
    const StreamDevice& device = plan_.devices[state->device_index];
    try {
      if (!state->drain) state->drain = device.backend->CreateEvent(device.device);
      state->drain->Record(state->stream_id);
    } catch (const std::exception& error) {
      failures.push_back({state.get(), error.what()});
    }
  }
  for (auto& state : streams_) {
    if (!state->used || !state->drain) continue;
    try {
      // Waits also when recording failed: an earlier record may be pending.
      state->drain->Synchronize();
    } catch (const std::exception& error) {
      failures.push_back({state.get(), error.what()});
    }
  }
  if (failures.empty() || !report_failures) return;

  // Failures spread forward (along a stream, and to streams that waited for
  // a failed event), never to ops that come earlier in the net, so the
  // failed op with the lowest index is where it started.
  std::vector<int> best_culprits;
  std::string best_message = failures.front().message;
  const StreamState* best_stream = failures.front().stream;
  for (const Failure& failure : failures) {
    std::vector<int> culprits;
    std::string message = failure.message;
    FindFailedOp(*failure.stream, &culprits, &message);
    if (culprits.empty()) continue;
    if (best_culprits.empty() || culprits.back() < best_culprits.back()) {
      best_culprits = std::move(culprits);
      best_message = std::move(message);
      best_stream = failure.stream;
    }
  }
  Error error(best_message);
  const std::string where = StreamLabel(best_stream->device_index, best_stream->stream_id);
  if (best_culprits.empty()) {
    error.AppendContext("while waiting for the work queued on " + where);
  } else if (best_culprits.size() == 1) {
    error.AppendContext("in the device work of " + describe_(best_culprits.back()) + " on " +
                        where);
  } else {
    std::string names;
    for (int op : best_culprits) names += "\n  " + describe_(op);
    error.AppendContext("in the device work queued on " + where + " by one of:" + names);
  }
  throw error;
}

}  // namespace doppio
