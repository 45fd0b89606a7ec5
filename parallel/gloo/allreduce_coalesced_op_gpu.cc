// AllreduceCoalesced (engine "GLOO") on CUDA tensors: the k inputs are
// packed into one pinned host buffer on the op's stream, the stream is
// synchronized, one Gloo allreduce sums the buffer, and the sums are copied
// back on the stream (Run() waits for it before the op returns). Gloo here
// is built without CUDA, so this is collectives_gpu.cc's staging, with one
// buffer for all k tensors instead of one per replica. The schema and the
// argument rules are the CPU op's (allreduce_coalesced_op.cc).
#include <cstdint>
#include <memory>
#include <string>

#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_context.h"
#include "core/operator.h"
#include "core/registry.h"
#include "parallel/gloo/allreduce_algorithms.h"
#include "parallel/gloo/gloo_common.h"

namespace doppio {
namespace {

struct PinnedFree {
  void operator()(void* data) const { GetPinnedHostAllocator()->Free(data); }
};

class GlooAllreduceCoalescedGpuOp final : public Operator<CUDAContext> {
 public:
  GlooAllreduceCoalescedGpuOp(const OperatorDef& def, Workspace* workspace)
      : Operator<CUDAContext>(def, workspace), algorithm_(AllreduceAlgorithmArgument(*this)) {}

  void RunOnDevice() override {
    const CommonWorld& world = CommonWorldInput(*this);
    const InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/false);
    const DataType dtype = operands.tensors[0]->dtype();
    int64_t total = 0;
    for (size_t i = 0; i < operands.tensors.size(); ++i) {
      const Tensor& tensor = *operands.tensors[i];
      DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCUDA,
                     "the op (CUDA, engine GLOO): input ", i + 1, " ('", input_name(i + 1),
                     "') is a CPU tensor; run the CPU op for host tensors");
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
    const size_t itemsize = operands.tensors[0]->itemsize();
    const size_t nbytes = static_cast<size_t>(total) * itemsize;
    // Kept while the total stays the same, so the cached algorithm (keyed
    // on the buffer's address) survives across steps.
    if (staging_bytes_ != nbytes) {
      // The last run's copies back out of the old buffer may still be
      // queued (a net on streams does not wait for them).
      if (staging_) context_.FinishDeviceComputation();
      cache_.Reset();
      staging_.reset(GetPinnedHostAllocator()->Allocate(nbytes));
      staging_bytes_ = nbytes;
    }
    char* staging = static_cast<char*>(staging_.get());
    size_t offset = 0;
    for (const Tensor* tensor : operands.tensors) {
      if (tensor->numel() > 0) context_.CopyBytes(tensor->nbytes(), tensor->raw_data(),
                                                  staging + offset);
      offset += tensor->nbytes();
    }
    context_.FinishDeviceComputation();
    const bool ok =
        failures.Run("coalesced allreduce (" + algorithm + ", staged on the host)", world, [&] {
          AlgorithmKey key;
          key.world = world;
          key.buffers = {staging};
          key.count = count;
          key.dtype = dtype;
          key.variant = algorithm;
          auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
            if (dtype == DataType::kFloat) {
              return MakeAllreduce<float>(algorithm, world, {reinterpret_cast<float*>(staging)},
                                          count);
            }
            return MakeAllreduce<double>(algorithm, world,
                                         {reinterpret_cast<double*>(staging)}, count);
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
        context_.CopyBytes(tensor->nbytes(), staging + offset, tensor->raw_mutable_data(dtype));
      }
      offset += tensor->nbytes();
    }
  }

 private:
  std::string algorithm_;  // as given; "" = chosen per world size
  std::unique_ptr<void, PinnedFree> staging_;
  size_t staging_bytes_ = 0;
  CachedAlgorithm cache_;
};

}  // namespace

REGISTER_CUDA_OPERATOR_WITH_ENGINE(AllreduceCoalesced, GLOO, GlooAllreduceCoalescedGpuOp);

}  // namespace doppio
