// CreateNCCLCommunicator's CUDA kernel: the multi-process mode. Rank 0 makes
// the NCCL unique id, the Gloo store handler carries it to the other ranks
// (ExchangeUniqueId), and every rank joins the communicator on its op's GPU.
// The communicator is non-blocking so a rank that never arrives ends in a
// timeout error rather than a hang.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "parallel/gloo/gloo_common.h"
#include "parallel/nccl/nccl_common_gpu.h"
#include "parallel/nccl/nccl_util.h"

namespace doppio {
namespace {

class CreateNCCLCommunicatorOp final : public Operator<CUDAContext> {
 public:
  CreateNCCLCommunicatorOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace),
        size_(GetSingleArgument<int>("size", 0)),
        rank_(GetSingleArgument<int>("rank", -1)),
        name_(GetSingleArgument<std::string>("name", def.output(0))),
        timeout_(GetSingleArgument<int>("timeout_ms", 30000)) {
    DOPPIO_ENFORCE(HasArgument("size") && HasArgument("rank"),
                   "needs the arguments 'size' (number of processes) and 'rank'");
    DOPPIO_ENFORCE(timeout_.count() > 0, "timeout_ms must be positive");
  }

  void RunOnDevice() override {
    const GlooStoreHandler& handler = InputAs<GlooStoreHandler>(0);
    const std::vector<char> id_bytes = ExchangeUniqueId(
        DisplayName(), handler.store(), name_, rank_, size_, sizeof(ncclUniqueId),
        [] {
          ncclUniqueId id;
          DOPPIO_NCCL_CHECK(ncclGetUniqueId(&id));
          return std::vector<char>(id.internal, id.internal + sizeof(id.internal));
        },
        timeout_);
    ncclUniqueId id;
    std::memcpy(&id, id_bytes.data(), sizeof(id));

    auto comm = std::make_shared<NcclProcessCommunicator>();
    comm->rank = rank_;
    comm->size = size_;
    comm->device = context_.cuda_gpu_id();
    comm->timeout = timeout_;
    comm->description = "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                        " ('" + name_ + "', " + handler.description() + ")";
    {
      CudaDeviceGuard guard(comm->device);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      DOPPIO_NCCL_CHECK(ncclCommInitRankConfig(&comm->comm, size_, id, rank_, &config));
      WaitForNccl(&comm->comm, timeout_,
                  DisplayName() + ": joining the communicator as " + comm->description);
    }
    *OutputAs<NcclCommunicatorBlob>(0) = std::move(comm);
  }

 private:
  const int size_;
  const int rank_;
  const std::string name_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(CreateNCCLCommunicator, CreateNCCLCommunicatorOp);

}  // namespace doppio
