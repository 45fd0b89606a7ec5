// CUDA kernels of NCCLAllreduce / NCCLBroadcast / NCCLReduce / NCCLAllGather /
// NCCLReduceScatter (schemas in nccl_ops_schema.cc).
//
// Single-process form: input i is a tensor on GPU devices[i] (read from the
// tensor, not from arguments); the communicators over that ordered device
// set are cached; one NCCL call per device, on that device's stream, inside
// one ncclGroupStart/End.
// Multi-process form: input 0 is a communicator blob (CreateNCCLCommunicator)
// and input 1 this process's tensor on the communicator's GPU; `root` is then
// a global rank.
//
// Stream order: the op's stream (its DeviceOption's device) records an event
// each other device's stream waits for before the collective, so the NCCL
// calls follow whatever the op's stream had queued; afterwards the op's
// stream waits for each other stream, so the event the net records on the
// op's stream after the op (or its host sync) covers every device. Other
// devices' work is queued on their worker-0 stream; ops of those devices on
// other dag workers' streams are ordered by the net's events, which all go
// through the op's stream.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "parallel/nccl/nccl_common_gpu.h"
#include "parallel/nccl/nccl_util.h"

namespace doppio {
namespace {

enum class Collective { kAllreduce, kBroadcast, kReduce, kAllGather, kReduceScatter };

// One local participant of the collective.
struct Participant {
  const Tensor* input = nullptr;
  Tensor* output = nullptr;  // null: a non-root rank of Reduce
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

template <Collective kKind>
class NcclCollectiveOp final : public Operator<CUDAContext> {
 public:
  NcclCollectiveOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), root_(GetSingleArgument<int>("root", 0)) {}

  void RunOnDevice() override {
    const bool has_comm = InputSize() > 0 && InputBlob(0).IsType<NcclCommunicatorBlob>();
    const int first_tensor = has_comm ? 1 : 0;
    std::vector<CollectiveInput> described;
    for (int i = first_tensor; i < InputSize(); ++i) {
      const Tensor& x = Input(i);
      described.push_back({input_name(i), x.device(), x.dtype(), x.dims()});
    }
    const std::vector<int> devices =
        CollectiveDevices(DisplayName(), described, NcclTypeSupported);
    const int local = static_cast<int>(devices.size());
    const int expected_outputs = kKind == Collective::kReduce ? 1 : local;
    DOPPIO_ENFORCE_EQ(OutputSize(), expected_outputs, "", local, " tensor inputs need ",
                      expected_outputs, " outputs");

    std::vector<Participant> parts(local);
    int ranks = local;
    NcclCommunicatorBlob process_comm;
    if (has_comm) {
      process_comm = InputAs<NcclCommunicatorBlob>(0);
      DOPPIO_ENFORCE(process_comm != nullptr, "communicator '", input_name(0), "' is empty");
      DOPPIO_ENFORCE_EQ(local, 1, "with a communicator ('", input_name(0),
                        "') the op takes this process's one tensor");
      DOPPIO_ENFORCE_EQ(devices[0], process_comm->device, "input '", input_name(1),
                        "' is not on the GPU of communicator '", input_name(0), "' (",
                        process_comm->description, ")");
      DOPPIO_ENFORCE(process_comm->comm != nullptr, "communicator '", input_name(0), "' (",
                     process_comm->description,
                     ") was aborted after an earlier failure; create a new one");
      ranks = process_comm->size;
      parts[0].rank = process_comm->rank;
      parts[0].comm = process_comm->comm;
    } else {
      const std::vector<ncclComm_t>& comms = SingleProcessComms(devices);
      for (int i = 0; i < local; ++i) {
        parts[i].rank = i;
        parts[i].comm = comms[i];
      }
    }
    if (kKind == Collective::kBroadcast || kKind == Collective::kReduce) {
      EnforceValidRoot(DisplayName(), root_, ranks);
    }
    for (int i = 0; i < local; ++i) {
      parts[i].input = &Input(first_tensor + i);
      parts[i].device = devices[i];
      parts[i].stream = devices[i] == context_.cuda_gpu_id() ? context_.cuda_stream()
                                                             : CudaStreamFor(devices[i], 0);
    }
    PrepareOutputs(&parts, ranks, first_tensor);

    const size_t count = CountPerCall(*parts[0].input, ranks);
    const ncclDataType_t type = NcclTypeOf(parts[0].input->dtype());
    OrderAfterOpStream(parts);
    {
      std::lock_guard<std::mutex> lock(NcclLaunchMutex());
      DOPPIO_NCCL_CHECK(ncclGroupStart());
      try {
        for (Participant& part : parts) {
          CudaDeviceGuard guard(part.device);
          Issue(part, count, type);
        }
      } catch (...) {
        (void)ncclGroupEnd();
        throw;
      }
      DOPPIO_NCCL_CHECK(ncclGroupEnd());
      if (process_comm) {
        WaitForNccl(&process_comm->comm, process_comm->timeout,
                    DisplayName() + " on " + process_comm->description);
      }
    }
    OrderOpStreamAfter(parts);
  }

 private:
  void PrepareOutputs(std::vector<Participant>* parts, int ranks, int first_tensor) {
    const int local = static_cast<int>(parts->size());
    for (int i = 0; i < local; ++i) {
      Participant& part = (*parts)[i];
      int output = i;
      if (kKind == Collective::kReduce) {
        if (part.rank != root_) continue;
        output = 0;
      }
      for (int j = 0; j < local; ++j) {
        // In place on another participant's input would overwrite it while
        // that device still sends it.
        DOPPIO_ENFORCE(j == i || !IsInputOutputAlias(first_tensor + j, output), "output '",
                       output_name(output), "' is input '", input_name(first_tensor + j),
                       "' of another device");
      }
      const Tensor& x = *part.input;
      std::vector<int64_t> dims = x.dims();
      if (kKind == Collective::kAllGather) {
        dims.insert(dims.begin(), ranks);
      } else if (kKind == Collective::kReduceScatter) {
        DOPPIO_ENFORCE(x.ndim() >= 1 && x.dim(0) % ranks == 0, "input '",
                       input_name(first_tensor + i),
                       "' needs a leading dimension divisible "
                       "by the ",
                       ranks, " ranks (output i is block i of the sum along it)");
        dims[0] /= ranks;
      }
      CudaDeviceGuard guard(part.device);
      SetCurrentCUDAStream(part.device, part.stream);
      part.output = OutputBlob(output)->GetMutableTensor(Device{DeviceKind::kCUDA, part.device});
      part.output->Resize(dims);
      part.output->raw_mutable_data(x.dtype());
    }
    SetCurrentCUDAStream(context_.cuda_gpu_id(), context_.cuda_stream());
  }

  static size_t CountPerCall(const Tensor& x, int ranks) {
    const size_t numel = static_cast<size_t>(x.numel());
    return kKind == Collective::kReduceScatter ? numel / ranks : numel;
  }

  void Issue(Participant& part, size_t count, ncclDataType_t type) {
    const void* send = part.input->raw_data();
    void* receive = part.output != nullptr ? part.output->raw_mutable_data() : nullptr;
    switch (kKind) {
      case Collective::kAllreduce:
        DOPPIO_NCCL_CHECK(
            ncclAllReduce(send, receive, count, type, ncclSum, part.comm, part.stream));
        break;
      case Collective::kBroadcast:
        DOPPIO_NCCL_CHECK(ncclBroadcast(send, receive, count, type, root_, part.comm, part.stream));
        break;
      case Collective::kReduce:
        DOPPIO_NCCL_CHECK(
            ncclReduce(send, receive, count, type, ncclSum, root_, part.comm, part.stream));
        break;
      case Collective::kAllGather:
        DOPPIO_NCCL_CHECK(ncclAllGather(send, receive, count, type, part.comm, part.stream));
        break;
      case Collective::kReduceScatter:
        DOPPIO_NCCL_CHECK(
            ncclReduceScatter(send, receive, count, type, ncclSum, part.comm, part.stream));
        break;
    }
  }

  CUDAEvent& EventOn(int device) {
    std::unique_ptr<CUDAEvent>& event = events_[device];
    if (!event) event = std::make_unique<CUDAEvent>(device);
    return *event;
  }

  void OrderAfterOpStream(const std::vector<Participant>& parts) {
    CUDAEvent& start = start_event_ ? *start_event_
                                    : *(start_event_ = std::make_unique<CUDAEvent>(
                                            context_.cuda_gpu_id()));
    context_.RecordEvent(start);
    for (const Participant& part : parts) {
      if (part.stream == context_.cuda_stream()) continue;
      CudaDeviceGuard guard(part.device);
      start.Block(part.stream);
    }
  }

  void OrderOpStreamAfter(const std::vector<Participant>& parts) {
    for (const Participant& part : parts) {
      if (part.stream == context_.cuda_stream()) continue;
      CUDAEvent& done = EventOn(part.device);
      done.Record(part.stream);
      context_.WaitEvent(done);
    }
  }

  const int root_;
  std::unique_ptr<CUDAEvent> start_event_;
  std::map<int, std::unique_ptr<CUDAEvent>> events_;
};

}  // namespace

REGISTER_CUDA_OPERATOR(NCCLAllreduce, NcclCollectiveOp<Collective::kAllreduce>);
REGISTER_CUDA_OPERATOR(NCCLBroadcast, NcclCollectiveOp<Collective::kBroadcast>);
REGISTER_CUDA_OPERATOR(NCCLReduce, NcclCollectiveOp<Collective::kReduce>);
REGISTER_CUDA_OPERATOR(NCCLAllGather, NcclCollectiveOp<Collective::kAllGather>);
REGISTER_CUDA_OPERATOR(NCCLReduceScatter, NcclCollectiveOp<Collective::kReduceScatter>);

}  // namespace doppio
