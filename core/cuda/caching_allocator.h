// The caching device allocator's bookkeeping, in plain C++ so it can be
// tested without a GPU: blocks are rounded up to size bins, a freed block
// stays cached for the next request of its bin, and a block freed on one
// stream is handed to another stream only after events recorded at free
// time have completed: on the stream it was allocated for and, when another
// stream frees it (a dag worker regrowing a tensor another worker wrote), on
// the freeing stream too, whose queue the executor has ordered after every
// reader of the old contents.
// Device memory and events come from a backing (CUDA's in cuda_allocator.cc,
// a fake in the tests).
//
// Thread-safety: all methods may be called from any thread (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace doppio {

// Streams and events are opaque handles here (cudaStream_t / cudaEvent_t in
// the CUDA backing). The null stream is a valid stream.
using StreamHandle = void*;
using EventHandle = void*;

class DeviceMemoryBacking {
 public:
  virtual ~DeviceMemoryBacking() = default;
  // Returns nullptr when the device is out of memory; throws for other errors.
  virtual void* Allocate(int device, size_t nbytes) = 0;
  virtual void Free(int device, void* ptr) = 0;
  // An event that completes when the work queued on `stream` so far is done.
  virtual EventHandle RecordEvent(int device, StreamHandle stream) = 0;
  virtual bool EventCompleted(int device, EventHandle event) = 0;
  virtual void DestroyEvent(int device, EventHandle event) = 0;
};

struct CachingAllocatorStats {
  int64_t current_bytes = 0;   // bin bytes of blocks handed out now
  int64_t peak_bytes = 0;      // most current_bytes since the last reset
  int64_t cached_bytes = 0;    // bin bytes of freed blocks kept for reuse
  int64_t allocations = 0;     // Allocate calls with nbytes > 0, ever
  int64_t backing_allocations = 0;  // blocks obtained from the backing, ever
  int64_t cache_hits = 0;      // Allocate calls served from the cache
};

class CachingAllocator {
 public:
  // With caching off every Free returns the block to the backing at once
  // (for debugging memory errors and measuring true footprints).
  CachingAllocator(DeviceMemoryBacking* backing, bool caching_enabled);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The bin a request falls in: at least kMinBlockBytes, then at most 1/4
  // over the request (four bins per power of two), so a cached block fits
  // many nearby sizes and wastes little.
  static size_t BinSize(size_t nbytes);
  static constexpr size_t kMinBlockBytes = 512;

  // Memory for nbytes on `device`, to be used on `stream`. nullptr for 0
  // bytes. Throws doppio::Error naming the bytes and device when the backing
  // is out of memory even after the cache is released.
  void* Allocate(int device, size_t nbytes, StreamHandle stream);
  // Throws doppio::Error for a pointer this allocator did not hand out.
  // `freeing_stream` maps the block's device to the stream the caller is
  // ordered on (nullptr for "no such function": the block's own stream).
  using CurrentStreamFunction = StreamHandle (*)(int device);
  void Free(void* ptr, CurrentStreamFunction freeing_stream = nullptr);

  // Returns every cached block to the backing. Blocks whose free event is
  // still pending are returned too: the CUDA backing's cudaFree waits for
  // the device, so no queued kernel loses its memory.
  void EmptyCache();

  bool caching_enabled() const { return caching_enabled_; }
  CachingAllocatorStats GetStats(int device) const;
  void ResetPeak(int device);

 private:
  struct Block {
    int device = 0;
    size_t size = 0;  // bin size
    void* ptr = nullptr;
    StreamHandle stream = nullptr;  // the stream it was allocated for
    // Set while cached, null otherwise: recorded on `stream` and, if another
    // stream freed the block, on that one (free_event_other).
    EventHandle free_event = nullptr;
    EventHandle free_event_other = nullptr;
  };
  struct DevicePool {
    // bin size -> cached blocks of that bin, oldest first.
    std::map<size_t, std::vector<std::unique_ptr<Block>>> cached;
    CachingAllocatorStats stats;
  };

  DevicePool& PoolLocked(int device);
  std::unique_ptr<Block> TakeCachedLocked(DevicePool& pool, size_t size, StreamHandle stream);
  void ReleaseCachedLocked(DevicePool& pool);
  void ReturnToBackingLocked(Block& block);
  bool FreeEventsCompletedLocked(const Block& block);
  void DestroyFreeEventsLocked(Block& block);

  DeviceMemoryBacking* backing_;
  const bool caching_enabled_;
  mutable std::mutex mutex_;
  std::map<int, DevicePool> pools_;
  std::unordered_map<void*, std::unique_ptr<Block>> in_use_;
};

}  // namespace doppio
