#include "parallel/nccl/nccl_common_gpu.h"

#include <thread>

#include "core/cuda/cuda_common.h"
#include "parallel/nccl/nccl_util.h"

namespace doppio {
namespace {

struct NcclCommSet {
  std::vector<ncclComm_t> comms;
};

}  // namespace

bool NcclTypeSupported(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
    case DataType::kFloat16:
    case DataType::kDouble:
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kInt32:
    case DataType::kInt64:
      return true;
    default:
      return false;
  }
}

ncclDataType_t NcclTypeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat: return ncclFloat32;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kDouble: return ncclFloat64;
    case DataType::kInt8: return ncclInt8;
    case DataType::kUint8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    default:
      DOPPIO_THROW("NCCL has no type for ", DataTypeName(dtype));
  }
}

NcclProcessCommunicator::~NcclProcessCommunicator() {
  if (comm != nullptr) (void)ncclCommDestroy(comm);
}

void WaitForNccl(ncclComm_t* comm, std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    ncclResult_t state = ncclSuccess;
    DOPPIO_NCCL_CHECK(ncclCommGetAsyncError(*comm, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const std::string detail = ncclGetLastError(*comm);
      (void)ncclCommAbort(*comm);
      *comm = nullptr;
      DOPPIO_THROW("", what, " failed: ", ncclGetErrorString(state), " (", detail,
                   "); the communicator was aborted");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      (void)ncclCommAbort(*comm);
      *comm = nullptr;
      DOPPIO_THROW("", what, " did not complete within ", timeout.count(),
                   " ms (a peer is missing or dead?); the communicator was aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

const std::vector<ncclComm_t>& SingleProcessComms(const std::vector<int>& devices) {
  static DeviceSetCache<NcclCommSet>* cache =
      new DeviceSetCache<NcclCommSet>([](const std::vector<int>& set) {
        for (int device : set) EnforceValidCudaDevice(device, "an NCCL communicator");
        auto comms = std::make_unique<NcclCommSet>();
        comms->comms.resize(set.size());
        DOPPIO_NCCL_CHECK(
            ncclCommInitAll(comms->comms.data(), static_cast<int>(set.size()), set.data()));
        return comms;
      });
  return cache->Get(devices).comms;
}

std::mutex& NcclLaunchMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

}  // namespace doppio
