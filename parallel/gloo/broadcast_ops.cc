#include "parallel/gloo/broadcast_ops.h"

#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast_one_to_all.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

GlooBroadcastOp::GlooBroadcastOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), root_(GetSingleArgument<int>("root", 0)) {
  DOPPIO_ENFORCE(root_ >= 0, "root must be a rank (>= 0), got ", root_);
}

void GlooBroadcastOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  DOPPIO_ENFORCE(root_ < world->size, "root ", root_, " is not a rank of the common world '",
                 input_name(0), "' (size ", world->size, ")");
  const InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/true);
  const Tensor& first = *operands.tensors[0];
  GlooFailureHandler failures(this, operands.status_output);
  if (first.nbytes() == 0) {
    failures.Run("broadcast", world, [] {});
    return;
  }
  // Bytes, so every fixed-size type travels the same way.
  std::vector<uint8_t*> buffers;
  AlgorithmKey key;
  key.world = world;
  for (Tensor* tensor : operands.tensors) {
    buffers.push_back(static_cast<uint8_t*>(tensor->raw_mutable_data()));
    key.buffers.push_back(buffers.back());
  }
  key.count = static_cast<int64_t>(first.nbytes());
  key.dtype = first.dtype();
  key.variant = "root " + std::to_string(root_);
  const bool ok = failures.Run("broadcast from root " + std::to_string(root_), world, [&] {
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      return std::make_unique<gloo::BroadcastOneToAll<uint8_t>>(world, buffers, first.nbytes(),
                                                                root_, 0);
    };
    cache_.Get(key, make).run();
  });
  if (!ok) cache_.Reset();
}

void GlooBarrierOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  DOPPIO_ENFORCE(OutputSize() <= 1, "the op has at most one output (the status), got ",
                 OutputSize());
  GlooFailureHandler failures(this, OutputSize() == 1 ? 0 : -1);
  AlgorithmKey key;
  key.world = world;
  const bool ok = failures.Run("barrier", world, [&] {
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      return std::make_unique<gloo::BarrierAllToOne>(world, 0);
    };
    cache_.Get(key, make).run();
  });
  if (!ok) cache_.Reset();
}

// Broadcast's schema lives with the in-process kernel (parallel/); it admits
// this engine's form: a common world, then the tensors, then a status.
REGISTER_CPU_OPERATOR_WITH_ENGINE(Broadcast, GLOO, GlooBroadcastOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(Barrier, GLOO, GlooBarrierOp);

OPERATOR_SCHEMA(Barrier)
    .NumInputs(1)
    .NumOutputs(0, 1)
    .Arg("status_blob", "(string, default \"\") Caffe2's alternative to the status output")
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Output(0, "status", "optional int32 scalar: 0 ok, 1 when the barrier failed (then "
                         "nothing is thrown)")
    .Doc("Cross-process barrier (engine \"GLOO\"): returns on every rank once all ranks "
         "have entered it, or fails after the world's timeout_ms.");

NO_GRADIENT(Barrier, "it synchronizes processes and has no tensor to differentiate");

}  // namespace doppio
