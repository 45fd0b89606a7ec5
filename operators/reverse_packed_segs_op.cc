#include "operators/reverse_packed_segs_op.h"

#include <algorithm>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

std::vector<int64_t> ReadLengths(const OperatorBase& op, const Tensor& lengths, int64_t batch,
                                 int64_t max_length) {
  DOPPIO_ENFORCE(lengths.ndim() == 1 && lengths.numel() == batch &&
                     (lengths.dtype() == DataType::kInt32 || lengths.dtype() == DataType::kInt64),
                 "lengths '", op.input_name(1), "' must be int32 or int64 [", batch,
                 "] (one per sequence), not ", lengths.DebugString());
  std::vector<int64_t> result(batch);
  for (int64_t n = 0; n < batch; ++n) {
    result[n] = lengths.dtype() == DataType::kInt32 ? lengths.data<int32_t>()[n]
                                                    : lengths.data<int64_t>()[n];
    DOPPIO_ENFORCE(0 <= result[n] && result[n] <= max_length, "lengths[", n, "] = ", result[n],
                   " is outside [0, ", max_length, "] (the data's first dim)");
  }
  return result;
}

}  // namespace

void ReversePackedSegsOp::RunOnDevice() {
  const Tensor& data = Input(0);
  DOPPIO_ENFORCE(data.ndim() == 3, "data '", input_name(0),
                 "' must be a 3-D tensor [lengths, segments, embeddings], not ", data.dims());
  const int64_t steps = data.dim(0), batch = data.dim(1), block = data.dim(2);
  const std::vector<int64_t> lengths = ReadLengths(*this, Input(1), batch, steps);
  Tensor* out = Output(0);
  DOPPIO_ENFORCE(!IsInputOutputAlias(0, 0), "ReversePackedSegs cannot run in place");
  out->Resize(data.dims());
  DispatchDataType(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = data.data<T>();
    T* y = out->mutable_data<T>();
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < lengths[n] ? lengths[n] - 1 - t : t;
        const T* source = x + (from * batch + n) * block;
        std::copy(source, source + block, y + (t * batch + n) * block);
      }
    }
  });
}

REGISTER_CPU_OPERATOR(ReversePackedSegs, ReversePackedSegsOp);

OPERATOR_SCHEMA(ReversePackedSegs)
    .NumInputs(2)
    .NumOutputs(1)
    .Input(0, "data", "[T, N, D]: N padded sequences of up to T steps")
    .Input(1, "lengths", "int32 or int64 [N]: each sequence's length")
    .Output(0, "reversed data", "each sequence reversed within its length, padding kept")
    .Doc("Reverses each sequence of a padded batch within its own length.");

namespace {

class GetReversePackedSegsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // The reversal is its own inverse.
    return SingleGradientDef("ReversePackedSegs", "", {GO(0), I(1)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(ReversePackedSegs, GetReversePackedSegsGradient);

}  // namespace doppio
