#include "core/cuda/cuda_allocator.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "core/cuda/cuda_common.h"

namespace doppio {
namespace {

class CudaMemoryBacking final : public DeviceMemoryBacking {
 public:
  void* Allocate(int device, size_t nbytes) override {
    CudaDeviceGuard guard(device);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, nbytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // out of memory is not sticky; clear it
      return nullptr;
    }
    DOPPIO_CUDA_CHECK(status);
    return ptr;
  }

  void Free(int device, void* ptr) override {
    CudaDeviceGuard guard(device);
    DOPPIO_CUDA_CHECK(cudaFree(ptr));
  }

  EventHandle RecordEvent(int device, StreamHandle stream) override {
    CudaDeviceGuard guard(device);
    cudaEvent_t event = nullptr;
    DOPPIO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    const cudaError_t status = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
    if (status != cudaSuccess) (void)cudaEventDestroy(event);
    DOPPIO_CUDA_CHECK(status);
    return event;
  }

  bool EventCompleted(int device, EventHandle event) override {
    CudaDeviceGuard guard(device);
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    DOPPIO_CUDA_CHECK(status);
    return true;
  }

  void DestroyEvent(int device, EventHandle event) override {
    CudaDeviceGuard guard(device);
    DOPPIO_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }
};

class CudaDeviceAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    DOPPIO_ENFORCE(HasCudaGpu(), "cannot allocate ", nbytes, " bytes of CUDA memory: ",
                   CudaUnavailableReason());
    const int device = CurrentCudaDevice();
    return GetCUDACachingAllocator().Allocate(device, nbytes, CurrentCUDAStream(device));
  }

  // The freeing thread's stream: a dag worker that regrows a tensor frees it
  // from its own stream, ordered after the old contents' readers.
  void Free(void* ptr) override {
    GetCUDACachingAllocator().Free(ptr, [](int device) -> StreamHandle {
      return CurrentCUDAStream(device);
    });
  }
};

class PinnedHostAllocator final : public Allocator {
 public:
  void* Allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    DOPPIO_ENFORCE(HasCudaGpu(), "cannot allocate ", nbytes, " bytes of pinned host memory: ",
                   CudaUnavailableReason());
    void* ptr = nullptr;
    const cudaError_t status = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      DOPPIO_THROW("out of pinned host memory allocating ", nbytes, " bytes: ",
                   cudaGetErrorString(status));
    }
    return ptr;
  }

  void Free(void* ptr) override {
    if (ptr != nullptr) DOPPIO_CUDA_CHECK(cudaFreeHost(ptr));
  }
};

thread_local std::unordered_map<int, cudaStream_t> t_current_streams;

// Linking //core/cuda makes CUDA tensors allocatable. Registering touches no
// CUDA API, so a binary on a machine without a GPU starts as fast as ever;
// the first CUDA allocation there fails with the reason.
const bool g_registered = [] {
  SetAllocator(DeviceKind::kCUDA, GetCUDAAllocator());
  return true;
}();

}  // namespace

bool CUDACachingEnabledByEnvironment() {
  const char* value = std::getenv("DOPPIO_CUDA_CACHING_ALLOCATOR");
  if (value == nullptr) return true;
  const std::string setting(value);
  return !(setting == "0" || setting == "false" || setting == "off");
}

CachingAllocator& GetCUDACachingAllocator() {
  // Never destroyed: at exit the CUDA runtime may already be torn down, and
  // freeing device memory then fails; the process exit frees it anyway.
  static CudaMemoryBacking* backing = new CudaMemoryBacking();
  static CachingAllocator* allocator =
      new CachingAllocator(backing, CUDACachingEnabledByEnvironment());
  return *allocator;
}

Allocator* GetCUDAAllocator() {
  static CudaDeviceAllocator allocator;
  return &allocator;
}

Allocator* GetPinnedHostAllocator() {
  static PinnedHostAllocator allocator;
  return &allocator;
}

cudaStream_t CurrentCUDAStream(int device) {
  auto found = t_current_streams.find(device);
  return found == t_current_streams.end() ? nullptr : found->second;
}

void SetCurrentCUDAStream(int device, cudaStream_t stream) { t_current_streams[device] = stream; }

}  // namespace doppio
