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

namespace {

// enabled[a * count + b]: device a may access device b's memory.
struct PeerAccessTable {
  int count = 0;
  std::vector<bool> enabled;
  int pairs = 0;
};

PeerAccessTable BuildPeerAccessTable() {
  PeerAccessTable table;
  table.count = CudaDeviceCount();
  table.enabled.assign(static_cast<size_t>(table.count) * table.count, false);
  for (int a = 0; a < table.count; ++a) table.enabled[a * table.count + a] = true;
  // One device has no peers; skip touching the runtime at all.
  if (table.count < 2) return table;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    (void)cudaGetLastError();
    previous = -1;
  }
  for (int a = 0; a < table.count; ++a) {
    // cudaDeviceEnablePeerAccess acts for the current device.
    if (cudaSetDevice(a) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    for (int b = 0; b < table.count; ++b) {
      if (a == b) continue;
      int can_access = 0;
      if (cudaDeviceCanAccessPeer(&can_access, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      if (!can_access) continue;
      const cudaError_t status = cudaDeviceEnablePeerAccess(b, 0);
      // Someone else (a library, an earlier context) may have enabled it.
      if (status == cudaSuccess || status == cudaErrorPeerAccessAlreadyEnabled) {
        table.enabled[a * table.count + b] = true;
        ++table.pairs;
      }
      // Neither outcome may linger for the next, unrelated error check.
      (void)cudaGetLastError();
    }
  }
  if (previous >= 0 && cudaSetDevice(previous) != cudaSuccess) (void)cudaGetLastError();
  return table;
}

const PeerAccessTable& PeerAccess() {
  // A function-local static: initialized once, thread-safely, on first use.
  static const PeerAccessTable table = BuildPeerAccessTable();
  return table;
}

}  // namespace

int EnableCudaPeerAccess() { return PeerAccess().pairs; }

bool CudaPeerAccessEnabled(int device, int peer) {
  const PeerAccessTable& table = PeerAccess();
  if (device < 0 || peer < 0 || device >= table.count || peer >= table.count) return false;
  return table.enabled[device * table.count + peer];
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
