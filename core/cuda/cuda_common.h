// CUDA basics shared by core/cuda and the CUDA operators: error checks that
// throw doppio::Error, a device count that is safe on machines without a GPU
// or driver, device properties and a guard for the current device.
//
// Thread-safety: everything here may be called from any thread. The current
// device is per host thread (CUDA's rule), which DeviceGuard relies on.
#pragma once

#include <cstddef>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "core/enforce.h"

namespace doppio {

// Throws doppio::Error naming the failed call, the CUDA error and the source
// location. A macro, so the message carries the caller's file and line.
#define DOPPIO_CUDA_CHECK(expr)                                              \
  do {                                                                       \
    const cudaError_t doppio_cuda_status = (expr);                           \
    if (doppio_cuda_status != cudaSuccess) {                                 \
      (void)cudaGetLastError(); /* so a later check does not see it again */   \
      DOPPIO_THROW("CUDA call ", #expr, " failed: ",                        \
                   cudaGetErrorName(doppio_cuda_status), " (",               \
                   cudaGetErrorString(doppio_cuda_status), ")");             \
    }                                                                        \
  } while (0)

#define DOPPIO_CUBLAS_CHECK(expr)                                            \
  do {                                                                       \
    const cublasStatus_t doppio_cublas_status = (expr);                      \
    if (doppio_cublas_status != CUBLAS_STATUS_SUCCESS) {                     \
      DOPPIO_THROW("cuBLAS call ", #expr, " failed: ",                      \
                   cublasGetStatusName(doppio_cublas_status), " (",          \
                   cublasGetStatusString(doppio_cublas_status), ")");        \
    }                                                                        \
  } while (0)

#define DOPPIO_CUDNN_CHECK(expr)                                             \
  do {                                                                       \
    const cudnnStatus_t doppio_cudnn_status = (expr);                        \
    if (doppio_cudnn_status != CUDNN_STATUS_SUCCESS) {                       \
      DOPPIO_THROW("cuDNN call ", #expr, " failed: ",                       \
                   cudnnGetErrorString(doppio_cudnn_status));                \
    }                                                                        \
  } while (0)

// The number of usable CUDA devices. Never throws: on a machine without a
// GPU, without a driver or with a driver too old for this toolkit it returns
// 0, and CudaUnavailableReason() says why. Asked once per process (the
// answer cannot change while the process runs).
int CudaDeviceCount();
bool HasCudaGpu();
// Empty when CudaDeviceCount() > 0; else the reason there is no device.
const std::string& CudaUnavailableReason();

// Throws doppio::Error naming `what` (an op, a blob) when `device` is not a
// usable device id.
void EnforceValidCudaDevice(int device, const std::string& what);

struct CudaDeviceProperties {
  int device = 0;
  std::string name;
  size_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
};
// Cached per device after the first call.
const CudaDeviceProperties& GetCudaDeviceProperties(int device);

// The calling thread's current device.
int CurrentCudaDevice();

// Lets every visible device read and write every other visible device's
// memory directly (cudaDeviceEnablePeerAccess for each ordered pair that
// cudaDeviceCanAccessPeer allows), so cross-device copies and NCCL go over
// NVLink/PCIe peer-to-peer instead of staging through host memory. Runs once
// per process, whatever the number of callers or threads; later calls only
// return the first call's result. Never throws: without a GPU, with one GPU
// or where the driver refuses a pair it does nothing for that pair. The
// caller's current device is left as it was. Returns the number of ordered
// pairs (a reads b) that have peer access.
int EnableCudaPeerAccess();

// Whether `device` can access `peer`'s memory directly after
// EnableCudaPeerAccess (which it runs first if no one has). A device always
// reaches its own memory; ids that are not visible devices give false.
bool CudaPeerAccessEnabled(int device, int peer);

// Makes `device` current for the guard's lifetime and restores the previous
// device on destruction (also when an exception unwinds through it).
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_device_ = 0;
  bool switched_ = false;
};

}  // namespace doppio
