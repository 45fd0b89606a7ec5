// Allreduce and Broadcast under engine "GLOO" on CUDA tensors (issue 7's GPU
// item). Gloo here is built without CUDA support, so the collectives run on
// host copies: each tensor is copied into a pinned host buffer on the op's
// stream, the stream is synchronized, the Gloo algorithm runs over the host
// buffers and the results are copied back on the stream (Run() waits for it
// before the op returns).
//
// The staging buffers stay with the op while the tensors' sizes stay the
// same, so the cached Gloo algorithm (keyed on buffer addresses) is reused
// from one run to the next, as on the CPU.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gloo/broadcast_one_to_all.h>

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
using PinnedBuffer = std::unique_ptr<void, PinnedFree>;

// Shared by both ops: the in-place CUDA operands and their host copies.
class GlooStagedGpuOp : public Operator<CUDAContext> {
 public:
  using Operator<CUDAContext>::Operator;

 protected:
  // Checks that the operands live on a GPU and copies them into the staging
  // buffers; returns once the host copies are complete.
  InplaceOperands StageToHost() {
    InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/true);
    const size_t nbytes = operands.tensors[0]->nbytes();
    if (staging_.size() != operands.tensors.size() || staging_bytes_ != nbytes) {
      staging_.clear();
      for (size_t i = 0; i < operands.tensors.size(); ++i) {
        staging_.emplace_back(nbytes > 0 ? GetPinnedHostAllocator()->Allocate(nbytes) : nullptr);
      }
      staging_bytes_ = nbytes;
    }
    for (size_t i = 0; i < operands.tensors.size(); ++i) {
      const Tensor& tensor = *operands.tensors[i];
      DOPPIO_ENFORCE(tensor.device().kind == DeviceKind::kCUDA,
                     "the op (CUDA, engine GLOO): input ", i + 1, " ('", input_name(i + 1),
                     "') is a CPU tensor; run the CPU op for host tensors");
      context_.CopyBytes(nbytes, tensor.raw_data(), staging_[i].get());
    }
    context_.FinishDeviceComputation();
    return operands;
  }

  void CopyBackToDevice(const InplaceOperands& operands) {
    for (size_t i = 0; i < operands.tensors.size(); ++i) {
      Tensor* tensor = operands.tensors[i];
      context_.CopyBytes(staging_bytes_, staging_[i].get(), tensor->raw_mutable_data());
    }
  }

  template <typename T>
  std::vector<T*> StagedBuffers() const {
    std::vector<T*> buffers;
    for (const PinnedBuffer& buffer : staging_) buffers.push_back(static_cast<T*>(buffer.get()));
    return buffers;
  }

  AlgorithmKey KeyFor(const CommonWorld& world, int64_t count, DataType dtype,
                      std::string variant) const {
    AlgorithmKey key;
    key.world = world;
    for (const PinnedBuffer& buffer : staging_) key.buffers.push_back(buffer.get());
    key.count = count;
    key.dtype = dtype;
    key.variant = std::move(variant);
    return key;
  }

  CachedAlgorithm cache_;

 private:
  std::vector<PinnedBuffer> staging_;
  size_t staging_bytes_ = 0;
};

class GlooAllreduceGpuOp final : public GlooStagedGpuOp {
 public:
  GlooAllreduceGpuOp(const OperatorDef& def, Workspace* workspace)
      : GlooStagedGpuOp(def, workspace), algorithm_(AllreduceAlgorithmArgument(*this)) {}

  void RunOnDevice() override {
    const CommonWorld& world = CommonWorldInput(*this);
    const InplaceOperands operands = StageToHost();
    const Tensor& first = *operands.tensors[0];
    DOPPIO_ENFORCE(first.dtype() == DataType::kFloat || first.dtype() == DataType::kDouble,
                   "input 1 ('", input_name(1), "') holds ", DataTypeName(first.dtype()),
                   "; Gloo sums float32 and float64 tensors");
    const int count = ElementCount(*this, first.numel());
    const std::string algorithm = ChooseAllreduceAlgorithm(algorithm_, *world);
    GlooFailureHandler failures(this, operands.status_output);
    if (count == 0) {
      failures.Run("allreduce", world, [] {});
      return;
    }
    const bool ok = failures.Run("allreduce (" + algorithm + ", staged on the host)", world, [&] {
      auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
        if (first.dtype() == DataType::kFloat) {
          return MakeAllreduce<float>(algorithm, world, StagedBuffers<float>(), count);
        }
        return MakeAllreduce<double>(algorithm, world, StagedBuffers<double>(), count);
      };
      cache_.Get(KeyFor(world, count, first.dtype(), algorithm), make).run();
    });
    if (!ok) {
      // The tensors keep their inputs; the status output reports the failure.
      cache_.Reset();
      return;
    }
    CopyBackToDevice(operands);
  }

 private:
  std::string algorithm_;
};

class GlooBroadcastGpuOp final : public GlooStagedGpuOp {
 public:
  GlooBroadcastGpuOp(const OperatorDef& def, Workspace* workspace)
      : GlooStagedGpuOp(def, workspace), root_(GetSingleArgument<int>("root", 0)) {
    DOPPIO_ENFORCE(root_ >= 0, "root must be a rank (>= 0), got ", root_);
  }

  void RunOnDevice() override {
    const CommonWorld& world = CommonWorldInput(*this);
    DOPPIO_ENFORCE(root_ < world->size, "root ", root_, " is not a rank of the common world '",
                   input_name(0), "' (size ", world->size, ")");
    // Non-root ranks stage too: their bytes are overwritten, but staging
    // checks every operand the same way on every rank.
    const InplaceOperands operands = StageToHost();
    const Tensor& first = *operands.tensors[0];
    GlooFailureHandler failures(this, operands.status_output);
    if (first.nbytes() == 0) {
      failures.Run("broadcast", world, [] {});
      return;
    }
    const std::string variant = "root " + std::to_string(root_);
    const bool ok =
        failures.Run("broadcast from root " + std::to_string(root_) + " (staged on the host)",
                     world, [&] {
                       auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
                         return std::make_unique<gloo::BroadcastOneToAll<uint8_t>>(
                             world, StagedBuffers<uint8_t>(), first.nbytes(), root_, 0);
                       };
                       cache_.Get(KeyFor(world, static_cast<int64_t>(first.nbytes()),
                                         first.dtype(), variant),
                                  make)
                           .run();
                     });
    if (!ok) {
      cache_.Reset();
      return;
    }
    CopyBackToDevice(operands);
  }

 private:
  int root_;
};

}  // namespace

// The schemas are the CPU ops' (//parallel:collectives_cpu).
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Allreduce, GLOO, GlooAllreduceGpuOp);
REGISTER_CUDA_OPERATOR_WITH_ENGINE(Broadcast, GLOO, GlooBroadcastGpuOp);

}  // namespace doppio
