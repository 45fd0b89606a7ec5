// The CUDA caching allocator's bookkeeping, run on the CPU over a fake
// backing whose events the test completes by hand.
#include "core/cuda/caching_allocator.h"

#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/enforce.h"

namespace doppio {
namespace {

struct FakeEvent {
  StreamHandle stream = nullptr;
  bool completed = false;
};

// Hands out fake addresses (never dereferenced) up to a byte capacity per
// device, and events that complete only when the test says so.
class FakeBacking final : public DeviceMemoryBacking {
 public:
  explicit FakeBacking(size_t capacity_bytes = SIZE_MAX) : capacity_bytes_(capacity_bytes) {}

  void* Allocate(int device, size_t nbytes) override {
    ++allocate_calls;
    if (nbytes > capacity_bytes_ - live_bytes_[device]) return nullptr;
    live_bytes_[device] += nbytes;
    next_address_ += 1 << 20;
    void* ptr = reinterpret_cast<void*>(next_address_);
    live_.insert(ptr);
    sizes_[ptr] = nbytes;
    devices_[ptr] = device;
    return ptr;
  }

  void Free(int device, void* ptr) override {
    ++free_calls;
    EXPECT_EQ(live_.count(ptr), 1u) << "backing freed a pointer it does not hold";
    EXPECT_EQ(devices_[ptr], device);
    live_.erase(ptr);
    live_bytes_[device] -= sizes_[ptr];
  }

  EventHandle RecordEvent(int /*device*/, StreamHandle stream) override {
    auto* event = new FakeEvent{stream, false};
    events_.insert(event);
    ++events_recorded;
    return event;
  }

  bool EventCompleted(int /*device*/, EventHandle event) override {
    EXPECT_EQ(events_.count(static_cast<FakeEvent*>(event)), 1u);
    return static_cast<FakeEvent*>(event)->completed;
  }

  void DestroyEvent(int /*device*/, EventHandle event) override {
    auto* fake = static_cast<FakeEvent*>(event);
    EXPECT_EQ(events_.erase(fake), 1u) << "event destroyed twice";
    delete fake;
  }

  // The GPU catching up with everything queued so far.
  void CompleteAllEvents() {
    for (FakeEvent* event : events_) event->completed = true;
  }

  // One stream catching up; the others' events stay pending.
  void CompleteEventsOn(StreamHandle stream) {
    for (FakeEvent* event : events_) {
      if (event->stream == stream) event->completed = true;
    }
  }

  size_t live_blocks() const { return live_.size(); }
  size_t live_events() const { return events_.size(); }

  int allocate_calls = 0;
  int free_calls = 0;
  int events_recorded = 0;

 private:
  size_t capacity_bytes_;
  uintptr_t next_address_ = 0x10000000;
  std::map<int, size_t> live_bytes_;
  std::set<void*> live_;
  std::map<void*, size_t> sizes_;
  std::map<void*, int> devices_;
  std::set<FakeEvent*> events_;
};

StreamHandle Stream(int id) { return reinterpret_cast<StreamHandle>(static_cast<uintptr_t>(id)); }

TEST(CachingAllocatorTest, BinSizesAreMultiplesOfAQuarterPowerOfTwo) {
  // Hand-computed bins: 512 bytes minimum, then four bins per doubling.
  EXPECT_EQ(CachingAllocator::BinSize(1), 512u);
  EXPECT_EQ(CachingAllocator::BinSize(512), 512u);
  EXPECT_EQ(CachingAllocator::BinSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::BinSize(1025), 1536u);
  EXPECT_EQ(CachingAllocator::BinSize(4096), 4096u);
  EXPECT_EQ(CachingAllocator::BinSize(4097), 5120u);
  EXPECT_EQ(CachingAllocator::BinSize(7000), 7168u);
  EXPECT_EQ(CachingAllocator::BinSize(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::BinSize((size_t{1} << 20) + 1), (size_t{5} << 18));
  // Every bin holds its request and wastes less than a quarter of it (less
  // than a minimum block for small requests); bins never shrink as requests
  // grow.
  size_t previous = 0;
  for (size_t n = 1; n < (size_t{1} << 22); n = n * 9 / 8 + 1) {
    const size_t bin = CachingAllocator::BinSize(n);
    EXPECT_GE(bin, n);
    EXPECT_LT(bin - n, std::max<size_t>(512, n / 4)) << n;
    EXPECT_GE(bin, previous);
    previous = bin;
  }
}

TEST(CachingAllocatorTest, ZeroBytesIsNullAndFreeingNullIsANoOp) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  EXPECT_EQ(allocator.Allocate(0, 0, Stream(1)), nullptr);
  allocator.Free(nullptr);
  EXPECT_EQ(backing.allocate_calls, 0);
  EXPECT_EQ(allocator.GetStats(0).allocations, 0);
}

TEST(CachingAllocatorTest, FreedBlockIsReusedOnTheSameStreamAtOnce) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* first = allocator.Allocate(0, 1000, Stream(1));
  allocator.Free(first);
  // 900 bytes fall in the same 1024-byte bin; the free event has not
  // completed, which does not matter on the same stream.
  void* second = allocator.Allocate(0, 900, Stream(1));
  EXPECT_EQ(second, first);
  EXPECT_EQ(backing.allocate_calls, 1);
  EXPECT_EQ(allocator.GetStats(0).cache_hits, 1);
  // A reused block's event is no longer needed.
  EXPECT_EQ(backing.live_events(), 0u);
  allocator.Free(second);
}

StreamHandle FreeingFromStreamTwo(int /*device*/) { return Stream(2); }

TEST(CachingAllocatorTest, BlockFreedFromAnotherStreamWaitsForBothStreams) {
  // A dag worker on stream 2 regrows a tensor allocated on stream 1: stream 2
  // may still hold reads of the old contents, so not even stream 1 may take
  // the block at once, and stream 1 catching up is not enough.
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* block = allocator.Allocate(0, 1000, Stream(1));
  allocator.Free(block, FreeingFromStreamTwo);
  EXPECT_EQ(backing.live_events(), 2u);
  void* fresh_1 = allocator.Allocate(0, 1000, Stream(1));
  EXPECT_NE(fresh_1, block);
  backing.CompleteEventsOn(Stream(1));
  void* fresh_2 = allocator.Allocate(0, 1000, Stream(1));
  EXPECT_NE(fresh_2, block);
  backing.CompleteEventsOn(Stream(2));
  void* reused = allocator.Allocate(0, 1000, Stream(3));
  EXPECT_EQ(reused, block);
  EXPECT_EQ(backing.live_events(), 0u);
  allocator.Free(fresh_1);
  allocator.Free(fresh_2);
  allocator.Free(reused);
}

TEST(CachingAllocatorTest, FreeingFromTheAllocatingStreamRecordsOneEvent) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* block = allocator.Allocate(0, 1000, Stream(2));
  allocator.Free(block, FreeingFromStreamTwo);
  EXPECT_EQ(backing.live_events(), 1u);
  EXPECT_EQ(allocator.Allocate(0, 1000, Stream(2)), block);
  allocator.Free(block);
}

TEST(CachingAllocatorTest, OtherStreamWaitsForTheFreeEvent) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* on_stream_1 = allocator.Allocate(0, 1000, Stream(1));
  allocator.Free(on_stream_1);
  // Stream 1 may still be using the block: stream 2 gets fresh memory.
  void* on_stream_2 = allocator.Allocate(0, 1000, Stream(2));
  EXPECT_NE(on_stream_2, on_stream_1);
  EXPECT_EQ(backing.allocate_calls, 2);
  // Once stream 1 has passed the free, stream 2 may take the block.
  backing.CompleteAllEvents();
  void* reused = allocator.Allocate(0, 1000, Stream(2));
  EXPECT_EQ(reused, on_stream_1);
  EXPECT_EQ(backing.allocate_calls, 2);
  allocator.Free(on_stream_2);
  allocator.Free(reused);
}

TEST(CachingAllocatorTest, BinsAndDevicesDoNotMix) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* small = allocator.Allocate(0, 1000, Stream(1));
  allocator.Free(small);
  backing.CompleteAllEvents();
  void* larger = allocator.Allocate(0, 2000, Stream(1));  // bin 2048
  EXPECT_NE(larger, small);
  void* other_device = allocator.Allocate(1, 1000, Stream(1));
  EXPECT_NE(other_device, small);
  EXPECT_EQ(backing.allocate_calls, 3);
  allocator.Free(larger);
  allocator.Free(other_device);
}

TEST(CachingAllocatorTest, StatsCountBinBytes) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  void* a = allocator.Allocate(0, 1000, Stream(1));  // bin 1024
  void* b = allocator.Allocate(0, 5000, Stream(1));  // bin 5120
  CachingAllocatorStats stats = allocator.GetStats(0);
  EXPECT_EQ(stats.current_bytes, 1024 + 5120);
  EXPECT_EQ(stats.peak_bytes, 1024 + 5120);
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.allocations, 2);
  EXPECT_EQ(stats.backing_allocations, 2);

  allocator.Free(b);
  stats = allocator.GetStats(0);
  EXPECT_EQ(stats.current_bytes, 1024);
  EXPECT_EQ(stats.peak_bytes, 1024 + 5120);
  EXPECT_EQ(stats.cached_bytes, 5120);

  allocator.ResetPeak(0);
  EXPECT_EQ(allocator.GetStats(0).peak_bytes, 1024);

  void* c = allocator.Allocate(0, 4500, Stream(1));  // bin 5120 again: a hit
  stats = allocator.GetStats(0);
  EXPECT_EQ(c, b);
  EXPECT_EQ(stats.current_bytes, 1024 + 5120);
  EXPECT_EQ(stats.peak_bytes, 1024 + 5120);
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.allocations, 3);
  EXPECT_EQ(stats.backing_allocations, 2);
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(allocator.GetStats(7).allocations, 0);  // an untouched device

  allocator.Free(a);
  allocator.Free(c);
  allocator.EmptyCache();
  stats = allocator.GetStats(0);
  EXPECT_EQ(stats.current_bytes, 0);
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(backing.live_blocks(), 0u);
  EXPECT_EQ(backing.live_events(), 0u);
}

TEST(CachingAllocatorTest, DisabledCachingReturnsBlocksAtOnce) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, false);
  EXPECT_FALSE(allocator.caching_enabled());
  void* first = allocator.Allocate(0, 1000, Stream(1));
  allocator.Free(first);
  EXPECT_EQ(backing.free_calls, 1);
  EXPECT_EQ(backing.live_blocks(), 0u);
  EXPECT_EQ(backing.events_recorded, 0);
  allocator.Allocate(0, 1000, Stream(1));
  EXPECT_EQ(backing.allocate_calls, 2);
  const CachingAllocatorStats stats = allocator.GetStats(0);
  EXPECT_EQ(stats.cached_bytes, 0);
  EXPECT_EQ(stats.cache_hits, 0);
  EXPECT_EQ(stats.current_bytes, 1024);
}

TEST(CachingAllocatorTest, OutOfMemoryReleasesTheCacheThenRetries) {
  FakeBacking backing(4096);
  CachingAllocator allocator(&backing, true);
  void* cached = allocator.Allocate(0, 2048, Stream(1));
  allocator.Free(cached);
  // 2048 cached + 3072 new exceeds 4096: the cached block must go first.
  void* big = allocator.Allocate(0, 3000, Stream(1));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(backing.free_calls, 1);
  EXPECT_EQ(allocator.GetStats(0).cached_bytes, 0);
  EXPECT_EQ(backing.live_events(), 0u);
  allocator.Free(big);
}

TEST(CachingAllocatorTest, OutOfMemoryIsAnErrorNamingBytesAndDevice) {
  FakeBacking backing(4096);
  CachingAllocator allocator(&backing, true);
  void* all = allocator.Allocate(3, 4096, Stream(1));
  try {
    allocator.Allocate(3, 100, Stream(1));
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("out of memory"), std::string::npos) << message;
    EXPECT_NE(message.find("device 3"), std::string::npos) << message;
    EXPECT_NE(message.find("100 bytes"), std::string::npos) << message;
  }
  // The failure left the books as they were.
  EXPECT_EQ(allocator.GetStats(3).current_bytes, 4096);
  EXPECT_EQ(allocator.GetStats(3).allocations, 1);
  allocator.Free(all);
}

TEST(CachingAllocatorTest, FreeingAnUnknownOrFreedPointerIsAnError) {
  FakeBacking backing;
  CachingAllocator allocator(&backing, true);
  int not_from_allocator = 0;
  EXPECT_THROW(allocator.Free(&not_from_allocator), Error);
  void* block = allocator.Allocate(0, 64, Stream(1));
  allocator.Free(block);
  try {
    allocator.Free(block);
    FAIL() << "expected a double-free error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("did not allocate"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(allocator.GetStats(0).cached_bytes, 512);
}

}  // namespace
}  // namespace doppio
