// A fake asynchronous device for testing the nets' stream scheduling
// without a GPU: each (device, stream) of a FakeStreamBackend is a host
// thread that runs the work queued on it in order, each piece after a random
// delay, so work that no stream order or event orders visibly runs out of
// order. Events, device-side waits (a stream thread blocks until the event's
// point is reached) and failures (an exception in queued work fails the
// stream, as a bad kernel does, and the failure reaches whoever waits for a
// later event) behave as CUDA's do.
//
// FakeStreamContext is a device context on it, for Operator<Context> test
// ops: an op's DeviceOption cuda_gpu_id picks the fake device, and its
// tensors live in host memory (the fake "device memory").
//
// Thread-safety: everything may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>

#include "core/context.h"
#include "core/event.h"
#include "proto/doppio.pb.h"

namespace doppio {
namespace testing {

class FakeStreamBackend final : public AsyncBackend {
 public:
  // Each queued piece of work first sleeps 0..max_jitter_us (from `seed`).
  explicit FakeStreamBackend(int max_jitter_us = 200, uint32_t seed = 1);
  // Runs what is still queued, then joins the stream threads.
  ~FakeStreamBackend() override;

  const char* name() const override { return "fake"; }
  std::unique_ptr<AsyncEvent> CreateEvent(int device) const override;

  // Queues `work` on stream `stream` of `device` and returns at once. If it
  // throws, the stream fails: its later work is skipped and events recorded
  // after it report the failure.
  void Enqueue(int device, int stream, std::function<void()> work);
  // Blocks until the work queued so far on the stream has run; throws
  // doppio::Error if the stream has failed.
  void SynchronizeStream(int device, int stream);

  struct Counters {
    int records = 0;
    int device_waits = 0;
    int host_waits = 0;  // AsyncEvent::Synchronize calls (drains included)
    int work = 0;        // pieces of work queued
    std::set<std::pair<int, int>> streams_with_work;  // (device, stream)
  };
  Counters counters() const;
  void ResetCounters();
  // Pieces of work (and markers) queued but not finished.
  int pending() const;

 private:
  class Stream;
  class Event;
  Stream& StreamFor(int device, int stream);
  // Queues a marker (a record or a device-side wait): no jitter, no
  // failure of its own.
  void EnqueueMarker(int device, int stream, std::function<void(Stream&)> marker);
  template <typename Update>
  void Count(Update update) {
    std::lock_guard<std::mutex> lock(mutex_);
    update(counters_);
  }

  const int max_jitter_us_;
  std::atomic<int> pending_{0};
  mutable std::mutex mutex_;
  std::mt19937 jitter_;
  Counters counters_;
  std::map<std::pair<int, int>, std::unique_ptr<Stream>> streams_;
};

// The backend FakeStreamContexts use; set by a ScopedFakeBackend.
FakeStreamBackend* CurrentFakeBackend();

class ScopedFakeBackend {
 public:
  explicit ScopedFakeBackend(FakeStreamBackend* backend);
  ~ScopedFakeBackend();
  ScopedFakeBackend(const ScopedFakeBackend&) = delete;
  ScopedFakeBackend& operator=(const ScopedFakeBackend&) = delete;

 private:
  FakeStreamBackend* previous_;
};

class FakeStreamContext {
 public:
  FakeStreamContext() : FakeStreamContext(DeviceOption()) {}
  // Throws doppio::Error when no fake backend is set.
  explicit FakeStreamContext(const DeviceOption& option);

  // Fake device memory is host memory.
  Device device() const { return Device{DeviceKind::kCPU, 0}; }
  int fake_device() const { return device_; }
  int stream_id() const { return stream_id_; }
  void SwitchToDevice(int stream_id = 0) { stream_id_ = stream_id; }
  void FinishDeviceComputation() { backend_->SynchronizeStream(device_, stream_id_); }
  StreamPlacement stream_placement() const { return {backend_, device_, true}; }

  // Queues `work` on the op's current stream.
  void Enqueue(std::function<void()> work) {
    backend_->Enqueue(device_, stream_id_, std::move(work));
  }

 private:
  FakeStreamBackend* backend_;
  int device_ = 0;
  int stream_id_ = 0;
};

}  // namespace testing
}  // namespace doppio
