// ParallelFor (operators/parallel_for.h): every element in exactly one
// range, ranges on 16-element boundaries, one range per thread at most, the
// caller's thread alone below the size threshold or inside a parallel
// region; and the ops built on it give the bits of a serial loop.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "operators/parallel_for.h"

namespace doppio {
namespace {

struct Ranges {
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

Ranges Split(int64_t n, int threads, int64_t min_per_thread) {
  omp_set_num_threads(threads);
  Ranges seen;
  std::mutex mutex;
  ParallelFor(
      n,
      [&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mutex);
        seen.ranges.emplace_back(begin, end);
      },
      min_per_thread);
  std::sort(seen.ranges.begin(), seen.ranges.end());
  return seen;
}

TEST(ParallelForTest, RangesCoverEveryElementOnce) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t n : {1, 15, 16, 17, 100, 4097, 100000}) {
      const Ranges split = Split(n, threads, 1);
      ASSERT_FALSE(split.ranges.empty());
      EXPECT_LE(split.ranges.size(), static_cast<size_t>(threads));
      int64_t next = 0;
      for (const auto& range : split.ranges) {
        EXPECT_EQ(range.first, next) << "n " << n << " threads " << threads;
        EXPECT_LT(range.first, range.second);
        EXPECT_EQ(range.first % 16, 0);
        next = range.second;
      }
      EXPECT_EQ(next, n) << "threads " << threads;
    }
  }
  omp_set_num_threads(1);
}

TEST(ParallelForTest, SmallLoopsAndNestedCallsStayOnTheCallingThread) {
  // Below min_per_thread elements per thread: one range, the caller's.
  Ranges small = Split(1000, 4, 600);
  ASSERT_EQ(small.ranges.size(), 1u);
  EXPECT_EQ(small.ranges[0], std::make_pair(int64_t{0}, int64_t{1000}));
  EXPECT_EQ(Split(0, 4, 1).ranges.size(), 0u);
  EXPECT_EQ(Split(-5, 4, 1).ranges.size(), 0u);
  // 2000 elements, 600 per thread at least: 3 threads of the 4.
  EXPECT_EQ(Split(2000, 4, 600).ranges.size(), 3u);

  omp_set_num_threads(2);
  std::atomic<int> inner_ranges{0};
#pragma omp parallel num_threads(2)
  {
    ParallelFor(
        100000, [&](int64_t, int64_t) { inner_ranges.fetch_add(1); }, 1);
  }
  // Each of the 2 outer threads ran its loop as one range.
  EXPECT_EQ(inner_ranges.load(), 2);
  omp_set_num_threads(1);
}

TEST(ParallelForTest, PointwiseLoopGivesTheSerialBits) {
  const int64_t n = 300001;
  std::vector<float> x(n), serial(n), parallel(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 977) * 0.37f - 100.0f;
  for (int64_t i = 0; i < n; ++i) serial[i] = x[i] * 1.7f + 0.3f;
  omp_set_num_threads(2);
  ParallelFor(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) parallel[i] = x[i] * 1.7f + 0.3f;
  });
  omp_set_num_threads(1);
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace doppio
