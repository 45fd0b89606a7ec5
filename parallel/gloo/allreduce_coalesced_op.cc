#include "parallel/gloo/allreduce_coalesced_op.h"

#include <climits>
#include <cstring>
#include <memory>


#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/gloo/allreduce_algorithms.h"

namespace doppio {

GlooAllreduceCoalescedOp::GlooAllreduceCoalescedOp(const OperatorDef& def,
                                                   Workspace* workspace)
    : Operator<CPUContext>(def, workspace), algorithm_(AllreduceAlgorithmArgument(*this)) {}

void GlooAllreduceCoalescedOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/false);
  const DataType dtype = operands.tensors[0]->dtype();
  int64_t total = 0;
  for (size_t i = 0; i < operands.tensors.size(); ++i) {
    const Tensor& tensor = *operands.tensors[i];
    DOPPIO_ENFORCE(tensor.dtype() == DataType::kFloat || tensor.dtype() == DataType::kDouble,
                   "input ", i + 1, " ('", input_name(i + 1), "') holds ",
                   DataTypeName(tensor.dtype()), "; Gloo sums float32 and float64 tensors");
    DOPPIO_ENFORCE(tensor.dtype() == dtype, "input ", i + 1, " ('", input_name(i + 1), "') is ",
                   DataTypeName(tensor.dtype()), " but input 1 ('", input_name(1), "') is ",
                   DataTypeName(dtype), "; one collective sums one dtype");
    total += tensor.numel();
  }
  const int count = ElementCount(*this, total);
  const std::string algorithm = ChooseAllreduceAlgorithm(algorithm_, *world);
  GlooFailureHandler failures(this, operands.status_output);
  if (count == 0) {
    failures.Run("coalesced allreduce", world, [] {});
    return;
  }
  // Resize keeps the allocation while the total stays the same, so the
  // cached algorithm (keyed on the buffer's address) survives across steps.
  staging_.Resize({total});
  char* staging = static_cast<char*>(staging_.raw_mutable_data(dtype));
  const size_t itemsize = staging_.itemsize();
  size_t offset = 0;
  for (const Tensor* tensor : operands.tensors) {
    if (tensor->numel() > 0) std::memcpy(staging + offset, tensor->raw_data(), tensor->nbytes());
    offset += static_cast<size_t>(tensor->numel()) * itemsize;
  }
  const bool ok = failures.Run("coalesced allreduce (" + algorithm + ")", world, [&] {
    AlgorithmKey key;
    key.world = world;
    key.buffers = {staging};
    key.count = count;
    key.dtype = dtype;
    key.variant = algorithm;
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      if (dtype == DataType::kFloat) {
        return MakeAllreduce<float>(algorithm, world, {reinterpret_cast<float*>(staging)}, count);
      }
      return MakeAllreduce<double>(algorithm, world, {reinterpret_cast<double*>(staging)},
                                   count);
    };
    cache_.Get(std::move(key), make).run();
  });
  if (!ok) {
    // The tensors keep their local values: they are only written from a
    // completed sum.
    cache_.Reset();
    return;
  }
  offset = 0;
  for (Tensor* tensor : operands.tensors) {
    if (tensor->numel() > 0) {
      std::memcpy(tensor->raw_mutable_data(dtype), staging + offset, tensor->nbytes());
    }
    offset += static_cast<size_t>(tensor->numel()) * itemsize;
  }
}

REGISTER_CPU_OPERATOR_WITH_ENGINE(AllreduceCoalesced, GLOO, GlooAllreduceCoalescedOp);

OPERATOR_SCHEMA(AllreduceCoalesced)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1, INT_MAX)
    // A common world, then X_1..X_k in place, then an optional status.
    .NumInputsOutputs([](int in, int out) { return out == in - 1 || out == in; })
    .AllowInplace([](int in, int out) { return in == out + 1; })
    .Arg("algorithm", "(string) \"ring\", \"ring_chunked\" or \"halving_doubling\"; unset "
                      "picks halving_doubling for power-of-two worlds, else ring_chunked")
    .Arg("status_blob", "(string, default \"\") Caffe2-style alternative to the status output")
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Input(1, "X_1...", "float32 or float64 tensors of any shapes, one dtype; every rank "
                        "passes the same shapes in the same order")
    .Output(0, "X_1...", "in place: each the sum of its namesakes over all ranks")
    .Output(1, "status", "optional int32 scalar after the tensors: 0 ok, 1 when the "
                         "collective failed (then nothing is thrown and the tensors keep "
                         "their local values)")
    .Doc("Sums k different tensors across the processes of a common world with one Gloo "
         "allreduce over a packed staging buffer (PyTorch's all_reduce_coalesced): one "
         "collective's latency instead of k. Runs only under engine \"GLOO\". Not "
         "Allreduce: there every input is a replica of one tensor and all are summed "
         "together.");

NO_GRADIENT(AllreduceCoalesced,
            "a collective over gradients after the backward pass, not differentiated through");

}  // namespace doppio
