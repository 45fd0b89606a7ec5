#include "operators/scatter_weighted_sum_op.h"

#include <climits>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

namespace {

float ScalarWeight(const OperatorBase& op, int index, const Tensor& weight) {
  DOPPIO_ENFORCE(weight.dtype() == DataType::kFloat && weight.numel() == 1, "weight '",
                 op.input_name(index), "' must be one float32, not ", weight.DebugString());
  return weight.data<float>()[0];
}

}  // namespace

void ScatterWeightedSumOp::RunOnDevice() {
  DOPPIO_ENFORCE(InputSize() % 2 == 1,
                 "ScatterWeightedSum takes X0, w0, indices and then "
                 "(X, weight) pairs; got ",
                 InputSize(), " inputs");
  DOPPIO_ENFORCE(IsInputOutputAlias(0, 0), "ScatterWeightedSum runs in place: output 0 ('",
                 output_name(0), "') must be input 0 ('", input_name(0), "')");
  Tensor* X0 = Output(0);
  DOPPIO_ENFORCE(X0->dtype() == DataType::kFloat && X0->ndim() >= 1 && X0->numel() > 0, "X0 '",
                 input_name(0), "' must be a non-empty float32 tensor, not ", X0->DebugString());
  const int64_t rows = X0->dim(0), block = X0->SizeFromDim(1);
  const std::vector<int64_t> index = ReadRowIndices(*this, 2, Input(2), rows, 0);
  const int64_t count = static_cast<int64_t>(index.size());
  const float w0 = ScalarWeight(*this, 1, Input(1));
  float* data = X0->mutable_data<float>();
  if (w0 != 1.0f) {
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < block; ++j) data[index[i] * block + j] *= w0;
    }
  }
  for (int k = 3; k < InputSize(); k += 2) {
    const Tensor& X = Input(k);
    DOPPIO_ENFORCE(X.dtype() == DataType::kFloat && X.numel() == block * count, "slices '",
                   input_name(k), "' ", X.DebugString(), " must be float32 with ", count,
                   " rows of ", block);
    const float w = ScalarWeight(*this, k + 1, Input(k + 1));
    const float* x = X.data<float>();
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < block; ++j) data[index[i] * block + j] += w * x[i * block + j];
    }
  }
}

REGISTER_CPU_OPERATOR(ScatterWeightedSum, ScatterWeightedSumOp);

OPERATOR_SCHEMA(ScatterWeightedSum)
    .NumInputs(3, INT_MAX)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .Input(0, "X_0", "float32 [N, ...]: the tensor updated in place")
    .Input(1, "Weight_0", "[1]: the scale of the indexed rows")
    .Input(2, "INDICES", "int32 or int64 [K]: rows of X_0")
    .Output(0, "X_0", "X_0 updated")
    .Doc(
        "X_0[INDICES] = Weight_0 * X_0[INDICES] + sum_k Weight_k * X_k, in place; inputs "
        "after INDICES come in (X_k [K, ...], Weight_k [1]) pairs.");

SHOULD_NOT_DO_GRADIENT(ScatterWeightedSum, "it is an in-place sparse update");

}  // namespace doppio
