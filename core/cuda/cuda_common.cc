#include "core/cuda/cuda_common.h"

#include <memory>
#include <mutex>
#include <vector>

namespace doppio {
namespace {

struct DeviceCountProbe {
  int count = 0;
  std::string reason;
};

const DeviceCountProbe& Probe() {
  static const DeviceCountProbe probe = [] {
    DeviceCountProbe result;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      // cudaGetDeviceCount leaves the error sticky for cudaGetLastError;
      // clear it so the next, unrelated check does not report it.
      (void)cudaGetLastError();
      result.reason = MakeString("cudaGetDeviceCount failed: ", cudaGetErrorName(status), " (",
                                 cudaGetErrorString(status), ")");
      return result;
    }
    if (count <= 0) {
      result.reason = "cudaGetDeviceCount reports no CUDA device";
      return result;
    }
    result.count = count;
    return result;
  }();
  return probe;
}

}  // namespace

int CudaDeviceCount() { return Probe().count; }

bool HasCudaGpu() { return CudaDeviceCount() > 0; }

const std::string& CudaUnavailableReason() { return Probe().reason; }

void EnforceValidCudaDevice(int device, const std::string& what) {
  const int count = CudaDeviceCount();
  DOPPIO_ENFORCE(count > 0, "no CUDA device for ", what, " (", CudaUnavailableReason(), ")");
  DOPPIO_ENFORCE(device >= 0 && device < count, "CUDA device ", device, " asked for by ", what,
                 " does not exist (this machine has ", count, " device",
                 count == 1 ? "" : "s", ")");
}

const CudaDeviceProperties& GetCudaDeviceProperties(int device) {
  EnforceValidCudaDevice(device, "GetCudaDeviceProperties");
  static std::mutex mutex;
  static std::vector<std::unique_ptr<CudaDeviceProperties>> cache(CudaDeviceCount());
  std::lock_guard<std::mutex> lock(mutex);
  if (!cache[device]) {
    cudaDeviceProp raw{};
    DOPPIO_CUDA_CHECK(cudaGetDeviceProperties(&raw, device));
    auto properties = std::make_unique<CudaDeviceProperties>();
    properties->device = device;
    properties->name = raw.name;
    properties->total_memory_bytes = raw.totalGlobalMem;
    properties->compute_capability_major = raw.major;
    properties->compute_capability_minor = raw.minor;
    properties->multiprocessor_count = raw.multiProcessorCount;
    cache[device] = std::move(properties);
  }
  return *cache[device];
}

int CurrentCudaDevice() {
  int device = 0;
  DOPPIO_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

CudaDeviceGuard::CudaDeviceGuard(int device) {
  EnforceValidCudaDevice(device, "CudaDeviceGuard");
  previous_device_ = CurrentCudaDevice();
  if (previous_device_ != device) {
    DOPPIO_CUDA_CHECK(cudaSetDevice(device));
    switched_ = true;
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  // A destructor must not throw; restoring a device that was current a moment
  // ago only fails if the context is already broken, which the next checked
  // call reports.
  if (switched_) (void)cudaSetDevice(previous_device_);
}

}  // namespace doppio
