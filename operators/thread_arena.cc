#include "operators/thread_arena.h"

#include "core/allocator.h"

namespace doppio {

ThreadArena& ThreadArena::ForThisThread() {
  thread_local ThreadArena arena;
  return arena;
}

ThreadArena::~ThreadArena() { GetCPUAllocator()->Free(data_); }

// From the CPU allocator, so its bytes show in GetCPUAllocatorStats beside
// the blobs'.
void* ThreadArena::Reserve(size_t nbytes) {
  if (nbytes > capacity_) {
    Allocator* allocator = GetCPUAllocator();
    allocator->Free(data_);
    data_ = nullptr;
    capacity_ = 0;
    data_ = allocator->Allocate(nbytes);
    capacity_ = nbytes;
  }
  return data_;
}

}  // namespace doppio
