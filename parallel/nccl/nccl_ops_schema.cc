// Schemas of Caffe2's NCCL collectives (caffe2/contrib/nccl), compiled in
// every build so nets naming them validate and the Parallelize pass can emit
// them for GPU devices. Each op takes one tensor per GPU (input i on device
// i of the communicator) and runs from device 0's DeviceOption.
//
// Multi-process form: CreateNCCLCommunicator(store_handler) -> comm makes a
// communicator across processes (one rank each); a collective given that
// blob as its first input then takes this process's one tensor after it.
//
// The CUDA kernels are in nccl_ops_gpu.cc / nccl_communicator_gpu.cc
// (//parallel/nccl:nccl_ops). Here each op is also registered for CPU, as a
// kernel whose construction fails: without it, creating one would report
// "unknown operator type", which hides that the op exists and only needs
// CUDA; with it, a CUDA DeviceOption in a binary without //parallel/nccl:
// nccl_ops reports "no CUDA implementation in this build", and a CPU
// DeviceOption says NCCL ops run on GPUs only.
#include <climits>
#include <string>

#include "core/enforce.h"
#include "core/gradient.h"
#include "core/operator.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {
namespace {

// Caffe2's CAFFE2_COMPILE_TIME_MAX_GPUS: the most devices one op spans.
constexpr int kMaxGpus = 16;

const OperatorDef& RefuseOnCpu(const OperatorDef& def) {
  DOPPIO_THROW("operator '", def.type(), "'", def.name().empty() ? "" : " '" + def.name() + "'",
               " is an NCCL collective and runs on CUDA devices only, but its DeviceOption "
               "is a CPU one; this build has no CPU kernel for it. Place it on GPU 0 "
               "(device_type CUDA) in a build with CUDA, or use the in-process 'Allreduce' / "
               "'Broadcast' ops for CPU devices");
}

class NcclOnCpuOp final : public Operator<CPUContext> {
 public:
  NcclOnCpuOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CPUContext>(RefuseOnCpu(def), workspace) {}
  void RunOnDevice() override {}
};

// Output i has input i's shape and type.
std::vector<TensorShape> EachLikeItsInput(const OperatorDef& def,
                                          const std::vector<TensorShape>& inputs) {
  std::vector<TensorShape> outputs;
  for (int i = 0; i < def.output_size(); ++i) {
    if (i < static_cast<int>(inputs.size())) {
      outputs.push_back(inputs[i]);
    } else {
      TensorShape unknown;
      unknown.set_unknown_shape(true);
      outputs.push_back(unknown);
    }
  }
  return outputs;
}

std::vector<TensorShape> LikeInputZero(const OperatorDef&,
                                       const std::vector<TensorShape>& inputs) {
  return {inputs.at(0)};
}

}  // namespace

REGISTER_CPU_OPERATOR(NCCLAllreduce, NcclOnCpuOp);
REGISTER_CPU_OPERATOR(NCCLBroadcast, NcclOnCpuOp);
REGISTER_CPU_OPERATOR(NCCLReduce, NcclOnCpuOp);
REGISTER_CPU_OPERATOR(NCCLAllGather, NcclOnCpuOp);
REGISTER_CPU_OPERATOR(NCCLReduceScatter, NcclOnCpuOp);
REGISTER_CPU_OPERATOR(CreateNCCLCommunicator, NcclOnCpuOp);

// Tensor i may be updated in place, whether it is input i or, after a
// communicator, input i + 1.
bool InPlaceTensor(int in, int out) { return in == out || in == out + 1; }

OPERATOR_SCHEMA(NCCLAllreduce)
    .NumInputs(1, kMaxGpus)
    .NumOutputs(1, kMaxGpus)
    .TensorInferenceFunction(EachLikeItsInput)
    .AllowInplace(InPlaceTensor)
    .Input(0, "X_0", "device 0's tensor (float32 or float16), on GPU 0; or a communicator "
           "from CreateNCCLCommunicator, followed by this process's one tensor")
    .Input(1, "X_1...", "the same tensor of devices 1..n-1, each on its own GPU")
    .Output(0, "Y_0", "the elementwise sum of every input, on GPU 0 (in place: X_0)")
    .Output(1, "Y_1...", "the same sum on each other device (in place: X_i)")
    .Doc("NCCL allreduce across the GPUs of one process: every output becomes the sum of "
         "all inputs. Input i lives on GPU i of the communicator; the op is placed on "
         "device 0. The Parallelize pass uses it (use_nccl=True) to sum each gradient.");
SHOULD_NOT_DO_GRADIENT(NCCLAllreduce,
                       "a collective over per-device gradients inserted after backward by "
                       "the Parallelize pass; it is not differentiated through");

OPERATOR_SCHEMA(NCCLBroadcast)
    .NumInputs(1, kMaxGpus)
    .NumOutputs(1, kMaxGpus)
    .TensorInferenceFunction(EachLikeItsInput)
    .AllowInplace(InPlaceTensor)
    .Arg("root", "(int, default 0) the rank (position among the inputs, not a device id; "
         "with a communicator, the process's rank) whose tensor every other input receives")
    .Input(0, "X_0", "device 0's tensor, on GPU 0")
    .Input(1, "X_1...", "the other devices' tensors: same shape and type")
    .Output(0, "X_0", "in place: input `root`'s value")
    .Output(1, "X_1...", "in place: input `root`'s value")
    .Doc("NCCL broadcast across the GPUs of one process: every blob receives the root "
         "rank's tensor, in place. The Parallelize pass uses it (use_nccl=True) to give "
         "every replica device 0's initial parameters.");
SHOULD_NOT_DO_GRADIENT(NCCLBroadcast,
                       "a collective that copies parameters to every device at "
                       "initialization; it is not differentiated through");

OPERATOR_SCHEMA(NCCLReduce)
    .NumInputs(1, kMaxGpus)
    .NumOutputs(1)
    .TensorInferenceFunction(LikeInputZero)
    .AllowInplace([](int, int out) { return out == 0; })
    .Arg("root", "(int, default 0) the rank whose device receives the sum; with a "
         "communicator, only that process's output is written")
    .Input(0, "X_0", "device 0's tensor, on GPU 0")
    .Input(1, "X_1...", "the other devices' tensors: same shape and type")
    .Output(0, "Y", "the elementwise sum of every input, on the root's device")
    .Doc("NCCL reduce across the GPUs of one process: the sum of every input lands in the "
         "single output, on the root rank's device.");
SHOULD_NOT_DO_GRADIENT(NCCLReduce,
                       "a collective over per-device tensors; it is not differentiated "
                       "through");

OPERATOR_SCHEMA(NCCLAllGather)
    .NumInputs(1, kMaxGpus)
    .NumOutputs(1, kMaxGpus)
    .Input(0, "X_0", "device 0's tensor, on GPU 0")
    .Input(1, "X_1...", "the other devices' tensors: same shape and type")
    .Output(0, "Y_0", "every input concatenated along a new leading dimension, on GPU 0")
    .Output(1, "Y_1...", "the same gathering on each other device")
    .Doc("NCCL all-gather across the GPUs of one process: each output holds all inputs, "
         "rank order.");
SHOULD_NOT_DO_GRADIENT(NCCLAllGather,
                       "a collective over per-device tensors; it is not differentiated "
                       "through");

OPERATOR_SCHEMA(NCCLReduceScatter)
    .NumInputs(1, kMaxGpus)
    .NumOutputs(1, kMaxGpus)
    .Input(0, "X_0", "device 0's tensor, on GPU 0")
    .Input(1, "X_1...", "the other devices' tensors: same shape and type")
    .Output(0, "Y_0", "rank 0's block of the elementwise sum (the inputs' leading dimension "
            "divided by the number of ranks), on GPU 0")
    .Output(1, "Y_1...", "rank i's block of the sum, on GPU i")
    .Doc("NCCL reduce-scatter across the GPUs of one process: the inputs are summed and "
         "output i receives the i-th of n equal blocks of the sum.");
SHOULD_NOT_DO_GRADIENT(NCCLReduceScatter,
                       "a collective over per-device tensors; it is not differentiated "
                       "through");

OPERATOR_SCHEMA(CreateNCCLCommunicator)
    .NumInputs(1)
    .NumOutputs(1)
    .Arg("size", "(int, required) the number of processes (ranks) of the communicator")
    .Arg("rank", "(int, required) this process's rank, 0..size-1")
    .Arg("name", "(string, default: the output blob's name) the store key the unique id "
         "travels under; every rank must use the same name, and different communicators "
         "sharing a store need different names")
    .Arg("timeout_ms", "(int, default 30000) how long to wait for rank 0's id and for "
         "every rank to join, and later how long a collective waits for its peers")
    .Input(0, "store_handler", "a store handler (FileStoreHandlerCreate, "
           "RedisStoreHandlerCreate) every rank can reach")
    .Output(0, "comm", "the communicator, for the NCCL collectives' first input")
    .Doc("Makes an NCCL communicator across processes, one rank per process on the op's "
         "GPU: rank 0 generates the NCCL unique id and puts it in the store, the others "
         "wait for it, then all join. Doppio's counterpart of Gloo's CreateCommonWorld "
         "for NCCL (Caffe2 had no such op: its NCCL ops were single-process).");
NO_GRADIENT(CreateNCCLCommunicator, "it makes a communicator; no tensor flows through it");

}  // namespace doppio
