#include "tests/core/fake_streams.h"

#include <atomic>
#include <chrono>
#include <future>

#include "core/enforce.h"

namespace doppio {
namespace testing {
namespace {

std::atomic<FakeStreamBackend*> current_backend{nullptr};

// A copy of the failure, so a caller that appends context to what it
// catches does not change what the next waiter sees.
[[noreturn]] void ThrowCopyOf(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& error) {
    throw Error(error);
  } catch (const std::exception& error) {
    throw Error(error.what());
  }
}

}  // namespace

// One stream: a thread that runs its queue in order.
class FakeStreamBackend::Stream {
 public:
  explicit Stream(std::atomic<int>* pending) : pending_(pending) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    thread_.join();
  }

  // A marker (a record, a wait, a sync point) stops counting as pending
  // before it runs: it may wake a waiter that then looks at pending().
  void Push(std::function<void(Stream&)> item, bool is_marker) {
    pending_->fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({std::move(item), is_marker});
    }
    ready_.notify_one();
  }

  // Only called on the stream's own thread (from queued items).
  const std::exception_ptr& failure() const { return failure_; }
  void Fail(std::exception_ptr failure) {
    if (!failure_) failure_ = std::move(failure);
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Item item = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (item.is_marker) pending_->fetch_sub(1);
      item.run(*this);
      if (!item.is_marker) pending_->fetch_sub(1);
      lock.lock();
    }
  }

  std::atomic<int>* pending_;
  std::mutex mutex_;
  std::condition_variable ready_;
  struct Item {
    std::function<void(Stream&)> run;
    bool is_marker;
  };
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

class FakeStreamBackend::Event final : public AsyncEvent {
 public:
  Event(FakeStreamBackend* backend, int device) : backend_(backend), device_(device) {}

  void Record(int stream_id) override {
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = ++recorded_;
    }
    backend_->Count([](Counters& c) { ++c.records; });
    backend_->EnqueueMarker(device_, stream_id, [this, generation](Stream& stream) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (generation > completed_) {
        completed_ = generation;
        failure_ = stream.failure();
      }
      reached_.notify_all();
    });
  }

  void Block(int device, int stream_id) const override {
    const uint64_t target = Recorded();
    backend_->Count([](Counters& c) { ++c.device_waits; });
    backend_->EnqueueMarker(device, stream_id, [this, target](Stream& stream) {
      const std::exception_ptr failure = WaitFor(target);
      // A stream that waited for failed work fails too, as CUDA's would.
      if (failure) stream.Fail(failure);
    });
  }

  void Synchronize() const override {
    backend_->Count([](Counters& c) { ++c.host_waits; });
    const std::exception_ptr failure = WaitFor(Recorded());
    if (failure) ThrowCopyOf(failure);
  }

 private:
  uint64_t Recorded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }
  std::exception_ptr WaitFor(uint64_t generation) const {
    std::unique_lock<std::mutex> lock(mutex_);
    reached_.wait(lock, [&] { return completed_ >= generation; });
    return failure_;
  }

  FakeStreamBackend* backend_;
  int device_;
  mutable std::mutex mutex_;
  mutable std::condition_variable reached_;
  uint64_t recorded_ = 0;
  uint64_t completed_ = 0;
  std::exception_ptr failure_;
};

FakeStreamBackend::FakeStreamBackend(int max_jitter_us, uint32_t seed)
    : max_jitter_us_(max_jitter_us), jitter_(seed) {}

FakeStreamBackend::~FakeStreamBackend() {
  // Streams go one by one; a stream still waiting for another's event is
  // released when that one runs its queue, which it does before joining.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& entry : streams_) entry.second.reset();
}

std::unique_ptr<AsyncEvent> FakeStreamBackend::CreateEvent(int device) const {
  DOPPIO_ENFORCE(device >= 0, "fake stream backend: device ", device, " is negative");
  return std::make_unique<Event>(const_cast<FakeStreamBackend*>(this), device);
}

FakeStreamBackend::Stream& FakeStreamBackend::StreamFor(int device, int stream) {
  DOPPIO_ENFORCE(device >= 0 && stream >= 0, "fake stream backend: bad stream (", device, ", ",
                 stream, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Stream>& entry = streams_[{device, stream}];
  if (!entry) entry = std::make_unique<Stream>(&pending_);
  return *entry;
}

void FakeStreamBackend::Enqueue(int device, int stream, std::function<void()> work) {
  int delay_us = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (max_jitter_us_ > 0) {
      delay_us = std::uniform_int_distribution<int>(0, max_jitter_us_)(jitter_);
    }
    ++counters_.work;
    counters_.streams_with_work.emplace(device, stream);
  }
  auto delayed_work = [work = std::move(work), delay_us](Stream& s) {
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    if (s.failure()) return;  // a failed stream runs nothing more
    try {
      work();
    } catch (...) {
      s.Fail(std::current_exception());
    }
  };
  StreamFor(device, stream).Push(std::move(delayed_work), /*is_marker=*/false);
}

void FakeStreamBackend::EnqueueMarker(int device, int stream, std::function<void(Stream&)> marker) {
  StreamFor(device, stream).Push(std::move(marker), /*is_marker=*/true);
}

void FakeStreamBackend::SynchronizeStream(int device, int stream) {
  std::promise<std::exception_ptr> reached;
  std::future<std::exception_ptr> result = reached.get_future();
  EnqueueMarker(device, stream, [&reached](Stream& s) { reached.set_value(s.failure()); });
  const std::exception_ptr failure = result.get();
  if (failure) ThrowCopyOf(failure);
}

FakeStreamBackend::Counters FakeStreamBackend::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void FakeStreamBackend::ResetCounters() {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_ = Counters();
}

int FakeStreamBackend::pending() const { return pending_.load(); }

FakeStreamBackend* CurrentFakeBackend() { return current_backend.load(); }

ScopedFakeBackend::ScopedFakeBackend(FakeStreamBackend* backend)
    : previous_(current_backend.exchange(backend)) {}

ScopedFakeBackend::~ScopedFakeBackend() { current_backend.store(previous_); }

FakeStreamContext::FakeStreamContext(const DeviceOption& option)
    : backend_(CurrentFakeBackend()), device_(option.cuda_gpu_id()) {
  DOPPIO_ENFORCE(backend_ != nullptr,
                 "a FakeStreamContext needs a fake backend (ScopedFakeBackend)");
}

}  // namespace testing
}  // namespace doppio
