// Device memory allocators. A tensor's storage remembers the allocator that
// made it and gives the memory back to it.
//
// Thread-safety: Allocate/Free may be called from any thread.
#pragma once

#include <cstddef>

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

// The allocator for a device kind; CUDA's is installed by core/cuda.
Allocator* GetAllocator(DeviceKind kind);
void SetAllocator(DeviceKind kind, Allocator* allocator);

}  // namespace doppio
