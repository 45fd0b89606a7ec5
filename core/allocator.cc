#include "core/allocator.h"

#include <atomic>
#include <cstdlib>

#include "core/enforce.h"

namespace doppio {
namespace {

constexpr size_t kCPUAlignment = 64;

std::atomic<int64_t> g_cpu_current_bytes{0};
std::atomic<int64_t> g_cpu_peak_bytes{0};
std::atomic<int64_t> g_cpu_allocations{0};
std::atomic<int64_t> g_cpu_allocated_bytes{0};

void RaisePeakTo(int64_t bytes) {
  int64_t peak = g_cpu_peak_bytes.load(std::memory_order_relaxed);
  while (bytes > peak &&
         !g_cpu_peak_bytes.compare_exchange_weak(peak, bytes, std::memory_order_relaxed)) {
  }
}

// Free gets no size, so each block carries its size in a header one
// alignment unit long in front of the memory handed out; that keeps the
// returned pointer 64-byte aligned.
class AlignedCPUAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    DOPPIO_ENFORCE(nbytes <= SIZE_MAX - kCPUAlignment, "allocation of ", nbytes,
                   " bytes is too large");
    void* base = nullptr;
    if (posix_memalign(&base, kCPUAlignment, nbytes + kCPUAlignment) != 0 || base == nullptr) {
      DOPPIO_THROW("out of host memory allocating ", nbytes, " bytes");
    }
    *static_cast<size_t*>(base) = nbytes;
    const int64_t now = g_cpu_current_bytes.fetch_add(static_cast<int64_t>(nbytes),
                                                      std::memory_order_relaxed) +
                        static_cast<int64_t>(nbytes);
    RaisePeakTo(now);
    g_cpu_allocations.fetch_add(1, std::memory_order_relaxed);
    g_cpu_allocated_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    return static_cast<char*>(base) + kCPUAlignment;
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    void* base = static_cast<char*>(ptr) - kCPUAlignment;
    const size_t nbytes = *static_cast<size_t*>(base);
    g_cpu_current_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    std::free(base);
  }
};

// A function-local table, not a namespace-scope one: core/cuda registers its
// allocator from a static initializer, which may run before this file's.
Allocator** AllocatorTable() {
  static Allocator* table[2] = {GetCPUAllocator(), nullptr};
  return table;
}

}  // namespace

Allocator* GetCPUAllocator() {
  static AlignedCPUAllocator allocator;
  return &allocator;
}

AllocatorStats GetCPUAllocatorStats() {
  AllocatorStats stats;
  stats.current_bytes = g_cpu_current_bytes.load(std::memory_order_relaxed);
  stats.peak_bytes = g_cpu_peak_bytes.load(std::memory_order_relaxed);
  stats.allocations = g_cpu_allocations.load(std::memory_order_relaxed);
  stats.allocated_bytes = g_cpu_allocated_bytes.load(std::memory_order_relaxed);
  return stats;
}

void ResetCPUAllocatorPeak() {
  g_cpu_peak_bytes.store(g_cpu_current_bytes.load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
}

Allocator* GetAllocator(DeviceKind kind) {
  const int index = static_cast<int>(kind);
  DOPPIO_ENFORCE(index >= 0 && index < 2 && AllocatorTable()[index] != nullptr,
                 "no allocator for device kind ", index,
                 " (is this build compiled with CUDA and a GPU present?)");
  return AllocatorTable()[index];
}

void SetAllocator(DeviceKind kind, Allocator* allocator) {
  AllocatorTable()[static_cast<int>(kind)] = allocator;
}

}  // namespace doppio
