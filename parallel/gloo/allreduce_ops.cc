#include "parallel/gloo/allreduce_ops.h"

#include <climits>
#include <memory>
#include <vector>

#include <gloo/reduce_scatter.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/gloo/allreduce_algorithms.h"

namespace doppio {
namespace {

template <typename T>
std::vector<T*> TypedBuffers(const std::vector<Tensor*>& tensors) {
  std::vector<T*> buffers;
  for (Tensor* tensor : tensors) buffers.push_back(tensor->template mutable_data<T>());
  return buffers;
}

AlgorithmKey KeyOf(const CommonWorld& world, const std::vector<Tensor*>& tensors,
                   std::string variant) {
  AlgorithmKey key;
  key.world = world;
  for (Tensor* tensor : tensors) key.buffers.push_back(tensor->raw_data());
  key.count = tensors.at(0)->numel();
  key.dtype = tensors.at(0)->dtype();
  key.variant = std::move(variant);
  return key;
}

void EnforceSummable(const OperatorBase& op, const Tensor& tensor) {
  DOPPIO_ENFORCE(tensor.dtype() == DataType::kFloat || tensor.dtype() == DataType::kDouble,
                 "input 1 ('", op.input_name(1), "') holds ", DataTypeName(tensor.dtype()),
                 "; Gloo sums float32 and float64 tensors");
}

}  // namespace

GlooAllreduceOp::GlooAllreduceOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), algorithm_(AllreduceAlgorithmArgument(*this)) {}

void GlooAllreduceOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/true);
  const Tensor& first = *operands.tensors[0];
  EnforceSummable(*this, first);
  const int count = ElementCount(*this, first.numel());
  const std::string algorithm = ChooseAllreduceAlgorithm(algorithm_, *world);
  GlooFailureHandler failures(this, operands.status_output);
  if (count == 0) {
    failures.Run("allreduce", world, [] {});
    return;
  }
  const bool ok = failures.Run("allreduce (" + algorithm + ")", world, [&] {
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      if (first.dtype() == DataType::kFloat) {
        return MakeAllreduce<float>(algorithm, world, TypedBuffers<float>(operands.tensors),
                                    count);
      }
      return MakeAllreduce<double>(algorithm, world, TypedBuffers<double>(operands.tensors),
                                   count);
    };
    cache_.Get(KeyOf(world, operands.tensors, algorithm), make).run();
  });
  if (!ok) cache_.Reset();
}

void GlooReduceScatterOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const InplaceOperands operands = InplaceTensorsAfterWorld(this, /*same_shape=*/true);
  const Tensor& first = *operands.tensors[0];
  EnforceSummable(*this, first);
  const int count = ElementCount(*this, first.numel());
  std::vector<int> block_sizes(world->size, count / world->size);
  for (int r = 0; r < count % world->size; ++r) ++block_sizes[r];
  GlooFailureHandler failures(this, operands.status_output);
  if (count == 0) {
    failures.Run("reduce-scatter", world, [] {});
    return;
  }
  const bool ok = failures.Run("reduce-scatter (halving_doubling)", world, [&] {
    auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
      if (first.dtype() == DataType::kFloat) {
        return std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            world, TypedBuffers<float>(operands.tensors), count, block_sizes);
      }
      return std::make_unique<gloo::ReduceScatterHalvingDoubling<double>>(
          world, TypedBuffers<double>(operands.tensors), count, block_sizes);
    };
    cache_.Get(KeyOf(world, operands.tensors, "halving_doubling"), make).run();
  });
  if (!ok) cache_.Reset();
}

// Allreduce's schema lives with the in-process kernel (parallel/); it admits
// this engine's form: a common world, then the tensors, then a status.
REGISTER_CPU_OPERATOR_WITH_ENGINE(Allreduce, GLOO, GlooAllreduceOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(ReduceScatter, GLOO, GlooReduceScatterOp);

OPERATOR_SCHEMA(ReduceScatter)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1, INT_MAX)
    // A common world, then X_1..X_k in place, then an optional status.
    .NumInputsOutputs([](int in, int out) { return out == in - 1 || out == in; })
    .AllowInplace([](int in, int out) { return in == out + 1; })
    .Arg("status_blob", "(string, default \"\") Caffe2's alternative to the status output")
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Input(1, "X", "float32 or float64 tensor(s) of one shape; more are summed locally first")
    .Output(0, "X", "in place: its first n_r elements hold block r of the sum; the rest "
                    "is scratch")
    .Output(1, "status", "optional int32 scalar after the tensors: 0 ok, 1 when the "
                         "collective failed (then nothing is thrown)")
    .Doc("Cross-process reduce-scatter (engine \"GLOO\", halving/doubling): the N "
         "elements are cut into `size` consecutive blocks (N / size each, the first N % "
         "size one longer); rank r receives block r of the sum over all tensors of all "
         "ranks, in the first n_r elements of each X (Gloo's layout); the remaining "
         "elements are scratch.");

NO_GRADIENT(ReduceScatter,
            "a collective over gradients after the backward pass, not differentiated through");

}  // namespace doppio
