// ThreadArena: per-thread scratch that, once any thread has seen the
// process's largest request, lets every thread meet that request without
// another allocation (issue 13: no allocations in steady-state iterations,
// whichever dag worker runs the op). Allocation counts come from the CPU
// allocator's own counter; expected sizes from the requests made here.
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "operators/thread_arena.h"

namespace doppio {
namespace {

int64_t Allocations() { return GetCPUAllocatorStats().allocations; }

// Runs `body` on a fresh thread (so with a fresh, empty arena) and waits.
template <typename Body>
void OnNewThread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST(ThreadArenaTest, RepeatedRequestsOnOneThreadAllocateOnce) {
  OnNewThread([] {
    ThreadArena& arena = ThreadArena::ForThisThread();
    const int64_t before = Allocations();
    void* first = arena.Reserve(3000);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_GE(arena.capacity(), 3000u);
    const int64_t after_first = Allocations();
    EXPECT_EQ(after_first - before, 1);
    for (size_t bytes : {3000u, 100u, 2999u, 1u}) {
      EXPECT_EQ(arena.Reserve(bytes), first) << bytes;
    }
    EXPECT_EQ(Allocations(), after_first);
  });
}

TEST(ThreadArenaTest, AThreadSizesItsArenaForTheLargestRequestOfAnyThread) {
  // Larger than anything the other tests ask for, whatever their order.
  const size_t largest = size_t{8} << 20;
  OnNewThread([&] { ThreadArena::ForThisThread().Reserve(largest); });

  OnNewThread([&] {
    ThreadArena& arena = ThreadArena::ForThisThread();
    const int64_t before = Allocations();
    // A small first request already takes the size another thread needed,
    // so this worker's later turn at the large op allocates nothing.
    void* block = arena.Reserve(64);
    EXPECT_GE(arena.capacity(), largest);
    EXPECT_EQ(Allocations() - before, 1);
    EXPECT_EQ(arena.Reserve(largest), block);
    EXPECT_EQ(arena.Reserve(128), block);
    EXPECT_EQ(Allocations() - before, 1);
    // The block is really that large: writing all of it must be fine
    // (address sanitizer and valgrind builds check the bounds).
    static_cast<char*>(block)[largest - 1] = 1;
  });
}

TEST(ThreadArenaTest, ArenaGrowsWhenARequestExceedsEverythingSeen) {
  OnNewThread([] {
    ThreadArena& arena = ThreadArena::ForThisThread();
    arena.Reserve(16);
    const size_t capacity = arena.capacity();
    const int64_t before = Allocations();
    arena.Reserve(capacity + 4096);
    EXPECT_GE(arena.capacity(), capacity + 4096);
    EXPECT_EQ(Allocations() - before, 1);
  });
}

}  // namespace
}  // namespace doppio
