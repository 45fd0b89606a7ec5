#include "parallel/gloo/block_collectives_ops.h"

#include <climits>
#include <cstring>
#include <memory>
#include <string>

#include <gloo/allgather_ring.h>
#include <gloo/reduce_scatter.h>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "parallel/shard_block.h"

namespace doppio {
namespace {

// Where each tensor's block of each rank sits in the packed buffer
// (rank-major), in elements.
struct PackedLayout {
  // offset[r][i]: the start of rank r's block of tensor i.
  std::vector<std::vector<int64_t>> offset;
  std::vector<std::vector<ShardBlock>> block;
  // Elements of each rank's region, and of the whole buffer.
  std::vector<int64_t> region;
  int64_t total = 0;
};

PackedLayout LayoutOf(const std::vector<int64_t>& numels, int size) {
  PackedLayout layout;
  layout.offset.resize(size);
  layout.block.resize(size);
  layout.region.assign(size, 0);
  for (int r = 0; r < size; ++r) {
    for (int64_t n : numels) {
      const ShardBlock block = BlockOfShard(n, size, r);
      layout.offset[r].push_back(layout.total + layout.region[r]);
      layout.block[r].push_back(block);
      layout.region[r] += block.size();
    }
    layout.total += layout.region[r];
  }
  return layout;
}

void CopyElements(void* to, int64_t to_offset, const void* from, int64_t from_offset,
                  int64_t count, size_t itemsize) {
  if (count <= 0) return;
  std::memcpy(static_cast<char*>(to) + to_offset * itemsize,
              static_cast<const char*>(from) + from_offset * itemsize, count * itemsize);
}

void EnforceNumeric(const OperatorBase& op, int i, const Tensor& x, const Tensor& first) {
  DOPPIO_ENFORCE(x.dtype() != DataType::kUndefined && x.dtype() != DataType::kString, "input ",
                 i, " ('", op.input_name(i), "') is ", x.DebugString(),
                 "; it needs a written numeric tensor");
  x.raw_data();  // an error if never written
  DOPPIO_ENFORCE(x.dtype() == first.dtype(), "input ", i, " ('", op.input_name(i), "') holds ",
                 DataTypeName(x.dtype()), " but the first tensor holds ",
                 DataTypeName(first.dtype()), "; one collective moves one type");
}

}  // namespace

void GlooReduceScatterBlocksOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  const int count = InputSize() - 1;
  DOPPIO_ENFORCE(count >= 1 && OutputSize() == count, "the op takes a common world and m "
                 "tensors, and writes m blocks; got ", InputSize(), " inputs and ",
                 OutputSize(), " outputs");
  const Tensor& first = Input(1);
  std::vector<int64_t> numels;
  for (int i = 1; i <= count; ++i) {
    EnforceNumeric(*this, i, Input(i), first);
    numels.push_back(Input(i).numel());
  }
  DOPPIO_ENFORCE(first.dtype() == DataType::kFloat || first.dtype() == DataType::kDouble,
                 "input 1 ('", input_name(1), "') holds ", DataTypeName(first.dtype()),
                 "; Gloo sums float32 and float64 tensors");
  const PackedLayout layout = LayoutOf(numels, world->size);
  const int total = ElementCount(*this, layout.total);
  const size_t itemsize = first.itemsize();
  if (scratch_.size() != total * itemsize) {
    scratch_.assign(total * itemsize, 0);
    cache_.Reset();
  }
  for (int r = 0; r < world->size; ++r) {
    for (int i = 0; i < count; ++i) {
      CopyElements(scratch_.data(), layout.offset[r][i], Input(i + 1).raw_data(),
                   layout.block[r][i].begin, layout.block[r][i].size(), itemsize);
    }
  }
  GlooFailureHandler failures(this, -1);
  if (total > 0) {
    std::vector<int> receive;
    std::string variant = "halving_doubling";
    for (int64_t elements : layout.region) {
      receive.push_back(static_cast<int>(elements));
      variant += " " + std::to_string(elements);
    }
    AlgorithmKey key;
    key.world = world;
    key.buffers = {scratch_.data()};
    key.count = total;
    key.dtype = first.dtype();
    key.variant = variant;
    const bool ok = failures.Run("reduce-scatter blocks (halving_doubling)", world, [&] {
      auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
        if (first.dtype() == DataType::kFloat) {
          return std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
              world, std::vector<float*>{reinterpret_cast<float*>(scratch_.data())}, total,
              receive);
        }
        return std::make_unique<gloo::ReduceScatterHalvingDoubling<double>>(
            world, std::vector<double*>{reinterpret_cast<double*>(scratch_.data())}, total,
            receive);
      };
      cache_.Get(key, make).run();
    });
    if (!ok) cache_.Reset();
  } else {
    failures.Run("reduce-scatter blocks", world, [] {});
  }
  // Gloo leaves this rank's region of the sum at the front of the buffer.
  const int rank = world->rank;
  int64_t at = 0;
  const DataType dtype = first.dtype();
  for (int i = 0; i < count; ++i) {
    const int64_t n = layout.block[rank][i].size();
    Tensor* y = Output(i);
    y->Resize({n});
    CopyElements(y->raw_mutable_data(dtype), 0, scratch_.data(), at, n, itemsize);
    at += n;
  }
}

void GlooAllgatherBlocksOp::RunOnDevice() {
  const CommonWorld& world = CommonWorldInput(*this);
  DOPPIO_ENFORCE((InputSize() - 1) % 2 == 0 && InputSize() >= 3,
                 "the op takes a common world, m blocks and the m tensors they belong to; got ",
                 InputSize(), " inputs");
  const int count = (InputSize() - 1) / 2;
  DOPPIO_ENFORCE(OutputSize() == count, "the op writes its ", count, " tensors in place; got ",
                 OutputSize(), " outputs");
  const Tensor& first = Input(1);
  std::vector<int64_t> numels;
  for (int i = 0; i < count; ++i) {
    DOPPIO_ENFORCE(IsInputOutputAlias(1 + count + i, i), "output ", i, " ('", output_name(i),
                   "') must be input ", 1 + count + i, " ('", input_name(1 + count + i),
                   "'): the op writes the whole tensors in place");
    EnforceNumeric(*this, 1 + i, Input(1 + i), first);
    EnforceNumeric(*this, 1 + count + i, Input(1 + count + i), first);
    numels.push_back(Input(1 + count + i).numel());
  }
  const int rank = world->rank;
  const PackedLayout layout = LayoutOf(numels, world->size);
  ElementCount(*this, layout.total);
  const size_t itemsize = first.itemsize();
  // Every rank's region padded to the longest (rank 0's), so that Gloo's
  // ring allgather, whose buffers stay registered between runs, moves them.
  const int64_t padded = layout.region[0];
  const int bytes = ElementCount(*this, padded * static_cast<int64_t>(itemsize));
  ElementCount(*this, static_cast<int64_t>(bytes) * world->size);
  if (mine_.size() != static_cast<size_t>(bytes) ||
      scratch_.size() != static_cast<size_t>(bytes) * world->size) {
    mine_.assign(bytes, 0);
    scratch_.assign(static_cast<size_t>(bytes) * world->size, 0);
    cache_.Reset();
  }
  for (int i = 0; i < count; ++i) {
    const Tensor& block = Input(1 + i);
    DOPPIO_ENFORCE(block.numel() == layout.block[rank][i].size(), "input ", 1 + i, " ('",
                   input_name(1 + i), "') holds ", block.numel(), " elements, but rank ", rank,
                   "'s block of '", input_name(1 + count + i), "' (", numels[i],
                   " elements over ", world->size, " ranks) is ",
                   layout.block[rank][i].size());
    CopyElements(mine_.data(), layout.offset[rank][i] - layout.offset[rank][0], block.raw_data(),
                 0, block.numel(), itemsize);
  }
  GlooFailureHandler failures(this, -1);
  if (bytes > 0) {
    AlgorithmKey key;
    key.world = world;
    key.buffers = {mine_.data(), scratch_.data()};
    key.count = bytes;
    key.dtype = first.dtype();
    key.variant = "ring";
    const bool ok = failures.Run("allgather blocks (ring)", world, [&] {
      auto make = [&]() -> std::unique_ptr<gloo::Algorithm> {
        return std::make_unique<gloo::AllgatherRing<char>>(
            world, std::vector<const char*>{mine_.data()}, scratch_.data(), bytes);
      };
      cache_.Get(key, make).run();
    });
    if (!ok) cache_.Reset();
  } else {
    failures.Run("allgather blocks", world, [] {});
  }
  for (int i = 0; i < count; ++i) {
    Tensor* x = Output(i);
    void* data = x->raw_mutable_data(first.dtype());
    for (int r = 0; r < world->size; ++r) {
      CopyElements(data, layout.block[r][i].begin, scratch_.data(),
                   r * padded + layout.offset[r][i] - layout.offset[r][0],
                   layout.block[r][i].size(), itemsize);
    }
  }
}

REGISTER_CPU_OPERATOR_WITH_ENGINE(ReduceScatterBlocks, GLOO, GlooReduceScatterBlocksOp);
REGISTER_CPU_OPERATOR_WITH_ENGINE(AllgatherBlocks, GLOO, GlooAllgatherBlocksOp);

OPERATOR_SCHEMA(ReduceScatterBlocks)
    .NumInputs(2, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) { return out == in - 1; })
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Input(1, "X", "float32 or float64 tensors X_1..X_m (one type), of any shapes, the "
                   "same on every rank")
    .Output(0, "Y", "Y_1..Y_m, 1-D: this rank's block of each X_i summed over the ranks")
    .Doc("Cross-process reduce-scatter of several tensors in one collective (engine "
         "\"GLOO\", halving/doubling), for the sharded optimizer state: each flattened X_i "
         "is cut into one block per rank (n / size elements, the first n % size one "
         "longer) and rank r receives block r of the sum of X_i over all ranks.");

OPERATOR_SCHEMA(AllgatherBlocks)
    .NumInputs(3, INT_MAX)
    .NumOutputs(1, INT_MAX)
    .NumInputsOutputs([](int in, int out) { return in == 2 * out + 1; })
    // X_i (input m + 1 + i) is output i; the count m is not known here.
    .AllowInplace([](int in, int out) { return in > out + 1; })
    .Input(0, "comm_world", "a common world (CreateCommonWorld)")
    .Input(1, "Y", "Y_1..Y_m: this rank's block of each X_i (ReduceScatterBlocks' layout), "
                   "then X_1..X_m")
    .Output(0, "X", "X_1..X_m in place, shapes kept: every rank's block put back at its place")
    .Doc("Cross-process allgather of blocks (engine \"GLOO\", ring), the inverse of "
         "ReduceScatterBlocks' cut: after it every rank holds each whole X_i, assembled "
         "from each rank's block Y_i. All tensors share one numeric type.");

NO_GRADIENT(ReduceScatterBlocks, "a collective of the parameter update, after the backward pass");
NO_GRADIENT(AllgatherBlocks, "a collective of the parameter update, after the backward pass");

}  // namespace doppio
