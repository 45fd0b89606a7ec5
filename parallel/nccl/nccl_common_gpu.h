// What the NCCL ops' CUDA side shares: the error check, the type mapping,
// the communicator blob of the multi-process mode and the single-process
// communicator cache. Compiled by g++ against nccl.h; no kernels of our own.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nccl.h>

#include "core/enforce.h"
#include "core/types.h"

namespace doppio {

// Throws doppio::Error naming the call and NCCL's reason. ncclInProgress
// counts as success: non-blocking communicators return it from calls whose
// completion WaitForNccl polls.
#define DOPPIO_NCCL_CHECK(expr)                                                     \
  do {                                                                              \
    const ncclResult_t doppio_nccl_status = (expr);                                 \
    if (doppio_nccl_status != ncclSuccess && doppio_nccl_status != ncclInProgress) { \
      DOPPIO_THROW("NCCL call ", #expr, " failed: ",                               \
                   ncclGetErrorString(doppio_nccl_status), " (",                    \
                   ncclGetLastError(nullptr), ")");                                 \
    }                                                                               \
  } while (0)

// False for types NCCL cannot reduce (string, bool, int16 ...).
bool NcclTypeSupported(DataType dtype);
ncclDataType_t NcclTypeOf(DataType dtype);

// A communicator across processes, one rank per process, made by
// CreateNCCLCommunicator and held in a blob (as a shared_ptr, so copies of
// the blob's handle share one communicator). Its calls are non-blocking so a
// lost peer shows up as a timeout instead of a hang.
struct NcclProcessCommunicator {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 0;
  int device = 0;
  std::chrono::milliseconds timeout{0};
  std::string description;  // "rank 1 of 2 ('comm')": for error messages
  ~NcclProcessCommunicator();
};
using NcclCommunicatorBlob = std::shared_ptr<NcclProcessCommunicator>;

// Waits until the non-blocking `*comm`'s queued calls have been accepted
// (not completed on the GPU: that is the stream's business). After
// `timeout` or on an error it aborts the communicator, sets *comm to null
// (an aborted communicator must not be destroyed or used again) and throws
// naming `what`.
void WaitForNccl(ncclComm_t* comm, std::chrono::milliseconds timeout, const std::string& what);

// Communicators of one process over `devices` (rank i on devices[i]), made
// with ncclCommInitAll once per ordered device set and kept for the process.
const std::vector<ncclComm_t>& SingleProcessComms(const std::vector<int>& devices);

// NCCL calls from two threads to overlapping communicators in an order the
// GPUs disagree on deadlock; every NCCL group in this process is issued
// under this lock, as Caffe2 did.
std::mutex& NcclLaunchMutex();

}  // namespace doppio
