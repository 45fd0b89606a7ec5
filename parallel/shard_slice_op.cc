#include "parallel/shard_slice_op.h"

#include <cstring>
#include <utility>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/shard_block.h"

namespace doppio {

ShardSliceOp::ShardSliceOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      num_shards_(GetSingleArgument<int>("num_shards", 0)),
      shard_id_(GetSingleArgument<int>("shard_id", -1)) {
  DOPPIO_ENFORCE(num_shards_ >= 1, "argument num_shards must be >= 1, got ", num_shards_);
  DOPPIO_ENFORCE(shard_id_ >= 0 && shard_id_ < num_shards_, "argument shard_id ", shard_id_,
                 " is not in [0, num_shards = ", num_shards_, ")");
}

void ShardSliceOp::RunOnDevice() {
  const Tensor& input = Input(0);
  DOPPIO_ENFORCE(input.dtype() != DataType::kUndefined, "input 0 ('", input_name(0),
                 "') was never written");
  DOPPIO_ENFORCE(input.dtype() != DataType::kString, "input 0 ('", input_name(0),
                 "') holds strings; ShardSlice cuts numeric tensors");
  const ShardBlock block = BlockOfShard(input.numel(), num_shards_, shard_id_);
  // A tensor of its own, not a resized one: in place, the whole tensor's
  // storage must go, which is the point of keeping a block.
  Tensor sliced({block.size()}, input.dtype(), input.device());
  if (block.size() > 0) {
    std::memcpy(sliced.raw_mutable_data(input.dtype()),
                static_cast<const char*>(input.raw_data()) + block.begin * input.itemsize(),
                static_cast<size_t>(block.size()) * input.itemsize());
  }
  *Output(0) = std::move(sliced);
}

REGISTER_CPU_OPERATOR(ShardSlice, ShardSliceOp);

namespace {

std::vector<TensorShape> BlockShape(const OperatorDef& def,
                                    const std::vector<TensorShape>& inputs) {
  const ArgumentHelper args(def);
  const int num_shards = args.GetSingle<int>("num_shards", 0);
  const int shard_id = args.GetSingle<int>("shard_id", -1);
  TensorShape out;
  out.set_data_type(inputs.at(0).data_type());
  if (inputs[0].unknown_shape() || inputs[0].unknown_dims_size() > 0 || num_shards < 1 ||
      shard_id < 0 || shard_id >= num_shards) {
    out.set_unknown_shape(true);
    return {out};
  }
  int64_t n = 1;
  for (int64_t dim : inputs[0].dims()) n *= dim;
  out.add_dims(BlockOfShard(n, num_shards, shard_id).size());
  return {out};
}

}  // namespace

OPERATOR_SCHEMA(ShardSlice)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .TensorInferenceFunction(BlockShape)
    .Arg("num_shards", "(int, required) how many blocks the tensor is cut into", true)
    .Arg("shard_id", "(int, required) which block to keep, in [0, num_shards)", true)
    .Input(0, "X", "a numeric tensor of n elements")
    .Output(0, "Y", "1-D: elements [begin, end) of the flattened X, block shard_id of "
                    "num_shards (n / num_shards each, the first n % num_shards one longer)")
    .Doc("This shard's block of X (the sharded optimizer state's layout: "
         "parallel/shard_block.h). In place, X's storage is released.");

NO_GRADIENT(ShardSlice, "it cuts optimizer state after initialization and restores, outside "
                        "any differentiated net");

}  // namespace doppio
