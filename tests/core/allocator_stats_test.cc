// The CPU allocator's byte accounting, which memonger's benchmark and tests
// read to compare peak workspace bytes. Expected byte counts come from the
// shapes (elements x item size), not from the allocator.
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/tensor.h"
#include "core/workspace.h"

namespace doppio {
namespace {

TEST(AllocatorStatsTest, TensorsMoveCurrentAndPeakByTheirBytes) {
  ResetCPUAllocatorPeak();
  const AllocatorStats start = GetCPUAllocatorStats();
  EXPECT_EQ(start.peak_bytes, start.current_bytes);

  auto a = std::make_unique<Tensor>(std::vector<int64_t>{10, 20}, DataType::kFloat);  // 200 floats
  a->mutable_data<float>();
  AllocatorStats s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - start.current_bytes, 800);
  EXPECT_EQ(s.peak_bytes - start.current_bytes, 800);
  EXPECT_EQ(s.allocations - start.allocations, 1);
  EXPECT_EQ(s.allocated_bytes - start.allocated_bytes, 800);

  auto b = std::make_unique<Tensor>(std::vector<int64_t>{7}, DataType::kDouble);  // 7 doubles
  b->mutable_data<double>();
  s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - start.current_bytes, 856);
  EXPECT_EQ(s.peak_bytes - start.current_bytes, 856);

  a.reset();  // frees 800; the peak stays
  s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - start.current_bytes, 56);
  EXPECT_EQ(s.peak_bytes - start.current_bytes, 856);

  // A smaller tensor after the free does not raise the peak.
  Tensor c(std::vector<int64_t>{100}, DataType::kInt32);
  c.mutable_data<int32_t>();
  s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - start.current_bytes, 456);
  EXPECT_EQ(s.peak_bytes - start.current_bytes, 856);

  b.reset();
  c.Reset();
  s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes, start.current_bytes);
  EXPECT_EQ(s.peak_bytes - start.current_bytes, 856);
  EXPECT_EQ(s.allocations - start.allocations, 3);
  EXPECT_EQ(s.allocated_bytes - start.allocated_bytes, 800 + 56 + 400);
}

TEST(AllocatorStatsTest, ResetStartsANewPeakAtTheBytesHeldNow) {
  const int64_t base = GetCPUAllocatorStats().current_bytes;
  Tensor big(std::vector<int64_t>{1000}, DataType::kFloat);
  big.mutable_data<float>();
  Tensor held(std::vector<int64_t>{25}, DataType::kFloat);
  held.mutable_data<float>();
  big.Reset();
  EXPECT_GE(GetCPUAllocatorStats().peak_bytes - base, 4100);

  ResetCPUAllocatorPeak();
  AllocatorStats s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - base, 100);
  EXPECT_EQ(s.peak_bytes - base, 100);

  Tensor next(std::vector<int64_t>{50}, DataType::kFloat);
  next.mutable_data<float>();
  next.Reset();
  s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - base, 100);
  EXPECT_EQ(s.peak_bytes - base, 300);
}

TEST(AllocatorStatsTest, ResizingToMoreBytesReallocatesAndCountsOnlyTheNewBlock) {
  const int64_t base = GetCPUAllocatorStats().current_bytes;
  ResetCPUAllocatorPeak();
  Tensor t(std::vector<int64_t>{4}, DataType::kFloat);
  t.mutable_data<float>();
  t.Resize({8});
  t.mutable_data<float>();  // 16 bytes freed, 32 held; both live for a moment
  const AllocatorStats s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes - base, 32);
  EXPECT_EQ(s.peak_bytes - base, 48);
}

TEST(AllocatorStatsTest, WorkspaceBlobsAreCountedUntilRemoved) {
  Workspace ws;
  const int64_t base = GetCPUAllocatorStats().current_bytes;
  Tensor* t = ws.CreateBlob("x")->GetMutableTensor();
  t->Resize({3, 32, 32});
  t->mutable_data<float>();
  EXPECT_EQ(GetCPUAllocatorStats().current_bytes - base, 3 * 32 * 32 * 4);
  ws.RemoveBlob("x");
  EXPECT_EQ(GetCPUAllocatorStats().current_bytes, base);
}

TEST(AllocatorStatsTest, ConcurrentAllocationsBalanceOut) {
  ResetCPUAllocatorPeak();
  const int64_t base = GetCPUAllocatorStats().current_bytes;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([] {
      Allocator* allocator = GetCPUAllocator();
      for (int k = 0; k < 2000; ++k) allocator->Free(allocator->Allocate(128));
    });
  }
  for (auto& thread : threads) thread.join();
  const AllocatorStats s = GetCPUAllocatorStats();
  EXPECT_EQ(s.current_bytes, base);
  EXPECT_GE(s.peak_bytes - base, 128);
  EXPECT_LE(s.peak_bytes - base, 4 * 128);  // never more than 4 blocks at once
}

TEST(AllocatorStatsTest, AllocatedMemoryStaysAligned) {
  Allocator* allocator = GetCPUAllocator();
  for (size_t n : {1u, 3u, 64u, 1000u}) {
    void* p = allocator->Allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    allocator->Free(p);
  }
  allocator->Free(nullptr);  // a no-op, as std::free
}

}  // namespace
}  // namespace doppio
