#include "core/allocator.h"

#include <cstdlib>

#include "core/enforce.h"

namespace doppio {
namespace {

constexpr size_t kCPUAlignment = 64;

class AlignedCPUAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kCPUAlignment, nbytes) != 0 || ptr == nullptr) {
      DOPPIO_THROW("out of host memory allocating ", nbytes, " bytes");
    }
    return ptr;
  }
  void Free(void* ptr) override { std::free(ptr); }
};

Allocator* g_allocators[2] = {GetCPUAllocator(), nullptr};

}  // namespace

Allocator* GetCPUAllocator() {
  static AlignedCPUAllocator allocator;
  return &allocator;
}

Allocator* GetAllocator(DeviceKind kind) {
  const int index = static_cast<int>(kind);
  DOPPIO_ENFORCE(index >= 0 && index < 2 && g_allocators[index] != nullptr,
                 "no allocator for device kind ", index,
                 " (is this build compiled with CUDA and a GPU present?)");
  return g_allocators[index];
}

void SetAllocator(DeviceKind kind, Allocator* allocator) {
  g_allocators[static_cast<int>(kind)] = allocator;
}

}  // namespace doppio
