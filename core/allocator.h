// Device memory allocators. A tensor's storage remembers the allocator that
// made it and gives the memory back to it.
//
// Thread-safety: Allocate/Free may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace doppio {

enum class DeviceKind : int { kCPU = 0, kCUDA = 1 };

// Where a tensor lives: a device kind (DeviceType's values) and its id.
struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int id = 0;
  bool operator==(const Device& other) const {
    return kind == other.kind && id == other.id;
  }
  bool operator!=(const Device& other) const { return !(*this == other); }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes (never null for nbytes > 0; throws on failure).
  virtual void* Allocate(size_t nbytes) = 0;
  virtual void Free(void* ptr) = 0;
};

// 64-byte aligned host memory, so SIMD kernels and oneDNN never see a
// misaligned buffer.
Allocator* GetCPUAllocator();

// Byte accounting of the CPU allocator. memonger's benchmark and tests
// measure peak workspace bytes with it: the memory a net holds at its worst
// moment is what blob sharing is meant to lower, and RSS is too coarse
// (freed blocks stay mapped) to see it. Counted with relaxed atomics, so
// the cost is three atomic adds per Allocate, one per Free, and a
// compare-exchange loop that only spins while the peak actually rises.
struct AllocatorStats {
  int64_t current_bytes = 0;  // requested bytes now held
  int64_t peak_bytes = 0;     // most current_bytes since the last reset
  int64_t allocations = 0;    // Allocate calls with nbytes > 0, ever
  // Bytes those calls asked for, ever: with `allocations`, what a
  // steady-state iteration allocates (which should be nothing).
  int64_t allocated_bytes = 0;
};
AllocatorStats GetCPUAllocatorStats();
// Starts a new peak window at the bytes held now.
void ResetCPUAllocatorPeak();

// The allocator for a device kind; CUDA's is installed by core/cuda.
Allocator* GetAllocator(DeviceKind kind);
void SetAllocator(DeviceKind kind, Allocator* allocator);

}  // namespace doppio
