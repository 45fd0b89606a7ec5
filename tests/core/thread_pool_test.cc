// ThreadPool: every task runs once, on the pool's workers (as many at once
// as there are workers), escaped exceptions surface from WaitIdle, and
// destruction finishes queued work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/thread_pool.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;

TEST(ThreadPoolTest, RunsEveryTaskOnItsWorkersWithBoundedConcurrency) {
  ThreadPool pool(3, "cpu_7");
  EXPECT_EQ(pool.size(), 3);
  std::atomic<int> done{0}, active{0}, max_active{0};
  std::atomic<bool> labels_ok{true};
  for (int i = 0; i < 30; ++i) {
    pool.Submit([&] {
      const int now = ++active;
      int seen = max_active.load();
      while (now > seen && !max_active.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (ThreadPool::CurrentWorkerLabel().rfind("cpu_7/worker ", 0) != 0) labels_ok = false;
      --active;
      ++done;
    });
  }
  pool.WaitIdle();
  EXPECT_EQ(done.load(), 30);
  EXPECT_EQ(max_active.load(), 3);
  EXPECT_TRUE(labels_ok.load());
  EXPECT_EQ(ThreadPool::CurrentWorkerLabel(), "");
}

TEST(ThreadPoolTest, EscapedExceptionIsRethrownOnceByWaitIdle) {
  ThreadPool pool(2, "p");
  pool.Submit([] { throw std::runtime_error("task broke"); });
  pool.Submit([] {});
  EXPECT_THROW(pool.WaitIdle(), std::runtime_error);
  pool.WaitIdle();  // reported once
}

TEST(ThreadPoolTest, DestructorFinishesQueuedTasks) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(1, "p");
    for (int i = 0; i < 10; ++i) {
      pool.Submit([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++done;
      });
    }
  }
  EXPECT_EQ(done.load(), 10);
}

TEST(ThreadPoolTest, NeedsAWorker) {
  EXPECT_MESSAGE_HAS(ErrorOf([] { ThreadPool pool(0, "empty"); }), "'empty'", "at least one");
}

}  // namespace
}  // namespace doppio
