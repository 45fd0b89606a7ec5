// Asynchronous devices as the net executors see them: no CUDA here, so the
// scheduling (core/event_schedule.h) is plain C++ that tests drive with a
// fake device made of host threads (tests/core/fake_streams.h). The CUDA
// implementation is in core/cuda/cuda_context.h.
//
// Model (Caffe2's async scheduling, simplified): each device of a backend
// has numbered streams. A stream runs the work queued on it in order;
// different streams, and the host, run at the same time. An event marks a
// point in one stream's queue; another stream can wait for it on the device
// (the host does not block), or the host can wait for it. A failure in
// queued work (a bad kernel) surfaces when someone waits for an event
// recorded after it.
//
// An op whose work goes to a stream says so through its StreamPlacement
// (OperatorBase::stream_placement()); every other op has done its work when
// Run() returns, as before streams existed.
#pragma once

#include <memory>

namespace doppio {

class AsyncEvent;

// A family of stream devices: CUDA, or a test's fake. Backends live for the
// process (or, for a test's fake, longer than every net using them); nets
// hold plain pointers to them.
class AsyncBackend {
 public:
  virtual ~AsyncBackend() = default;
  // "CUDA": for messages.
  virtual const char* name() const = 0;
  // An event on `device` that has not been recorded yet. Throws
  // doppio::Error when the device is not usable.
  virtual std::unique_ptr<AsyncEvent> CreateEvent(int device) const = 0;
};

// Thread-safety: Record, Block and Synchronize may be called from different
// threads as long as each Block or Synchronize happens after the Record it
// means to wait for (the executors order them through their own
// synchronization: an op records before releasing its successors).
class AsyncEvent {
 public:
  virtual ~AsyncEvent() = default;
  // Marks the end of the work queued so far on stream `stream_id` of the
  // event's device; replaces the point an earlier Record marked.
  virtual void Record(int stream_id) = 0;
  // Makes stream `stream_id` of `device` (a device of the same backend, not
  // necessarily the event's) wait for the recorded point before it runs
  // work queued after this call. Does not block the host.
  virtual void Block(int device, int stream_id) const = 0;
  // Blocks the calling thread until the recorded point is reached. Throws
  // doppio::Error when work queued before that point failed. Returns at
  // once when the event was never recorded.
  virtual void Synchronize() const = 0;
};

// Where an op's work goes.
//   backend == nullptr: the host; the work is done when Run() returns
//     (every CPU op).
//   backend set, async: queued on a stream of `device`; the net orders it
//     with events and waits for it at the end of its run.
//   backend set, not async: a device op that needs a host sync (it reads
//     device data on the host, or its outputs are host memory that others
//     read at once): the net waits on the host for its parents' device work
//     first, and the op waits for its own stream before returning.
struct StreamPlacement {
  const AsyncBackend* backend = nullptr;
  int device = 0;
  bool async = false;

  bool on_streams() const { return backend != nullptr; }
  bool is_async() const { return backend != nullptr && async; }
};

}  // namespace doppio
