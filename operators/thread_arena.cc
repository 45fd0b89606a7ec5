#include "operators/thread_arena.h"

#include <atomic>

#include "core/allocator.h"

namespace doppio {

ThreadArena& ThreadArena::ForThisThread() {
  thread_local ThreadArena arena;
  return arena;
}

ThreadArena::~ThreadArena() { GetCPUAllocator()->Free(data_); }

namespace {

// The largest Reserve of any thread so far.
std::atomic<size_t> g_largest_request{0};

size_t RaiseLargestRequest(size_t nbytes) {
  size_t largest = g_largest_request.load(std::memory_order_relaxed);
  while (nbytes > largest &&
         !g_largest_request.compare_exchange_weak(largest, nbytes, std::memory_order_relaxed)) {
  }
  return nbytes > largest ? nbytes : largest;
}

}  // namespace

// From the CPU allocator, so its bytes show in GetCPUAllocatorStats beside
// the blobs'.
void* ThreadArena::Reserve(size_t nbytes) {
  const size_t wanted = RaiseLargestRequest(nbytes);
  if (wanted > capacity_) {
    Allocator* allocator = GetCPUAllocator();
    allocator->Free(data_);
    data_ = nullptr;
    capacity_ = 0;
    data_ = allocator->Allocate(wanted);
    capacity_ = wanted;
  }
  return data_;
}

}  // namespace doppio
