#include "operators/sparse_normalize_op.h"

#include <cmath>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/sparse_index_utils.h"

namespace doppio {

SparseNormalizeOp::SparseNormalizeOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      use_max_norm_(GetSingleArgument<bool>("use_max_norm", true)),
      norm_(GetSingleArgument<float>("norm", 1.0f)) {
  DOPPIO_ENFORCE(norm_ > 0, "argument norm must be > 0, got ", norm_);
}

void SparseNormalizeOp::RunOnDevice() {
  const Tensor& param = Input(0);
  const Tensor& indices = Input(1);
  const Tensor& grad = Input(2);
  EnforceHasRows(*this, 0, param);
  const int64_t row_size = param.SizeFromDim(1);
  const int64_t count = indices.numel();
  DOPPIO_ENFORCE(grad.numel() == count * row_size, "'", input_name(2), "' has ", grad.numel(),
                 " elements but ", count, " indices times rows of ", row_size, " elements of '",
                 input_name(0), "' need ", count * row_size);
  DispatchInput(IndexTypes{}, *this, 1, indices.dtype(), [&](auto index_tag) {
    using Index = typename decltype(index_tag)::type;
    const Index* index = indices.data<Index>();
    CheckIndicesInRange(*this, 1, index, count, param.dim(0), 0);
    DispatchTypes(FloatTypes{}, input_name(0), param.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      // Output 0 is param itself (EnforceInplace).
      T* w = Output(0)->template mutable_data<T>();
      for (int64_t k = 0; k < count; ++k) {
        T* row = w + static_cast<int64_t>(index[k]) * row_size;
        double squares = 0.0;
        for (int64_t j = 0; j < row_size; ++j) squares += static_cast<double>(row[j]) * row[j];
        const double length = std::sqrt(squares);
        if (length == 0.0 || (use_max_norm_ && length <= norm_)) continue;
        const T scale = static_cast<T>(norm_ / length);
        for (int64_t j = 0; j < row_size; ++j) row[j] *= scale;
      }
    });
  });
}

REGISTER_CPU_OPERATOR(SparseNormalize, SparseNormalizeOp);

OPERATOR_SCHEMA(SparseNormalize)
    .NumInputs(3)
    .NumOutputs(1)
    .EnforceInplace({{0, 0}})
    .Arg("use_max_norm", "(bool, default true) only shorten rows longer than norm")
    .Arg("norm", "(float, default 1) the rows' L2 norm (at most, with use_max_norm)")
    .Input(0, "param", "parameters, float32 or float64, rank >= 1 (updated in place)")
    .Input(1, "indices", "int32 or int64 rows of param to normalize")
    .Input(2, "grad", "the sparse gradient's values: one row per index (for the row size)")
    .Output(0, "output_param", "param with the indexed rows normalized")
    .Doc(
        "Sparse max-norm or constant-norm regularization of the rows a sparse gradient "
        "touched.");

SHOULD_NOT_DO_GRADIENT(SparseNormalize, "it is a parameter projection, not part of the model");

}  // namespace doppio
