#include "operators/top_k_op.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

namespace {

// A view of X as [outer, n, inner] around `axis`.
struct AxisView {
  int axis;
  int64_t outer, n, inner;
};

AxisView ViewAround(const Tensor& X, int axis_arg) {
  AxisView v;
  v.axis = X.CanonicalAxis(axis_arg);
  v.outer = X.SizeToDim(v.axis);
  v.n = X.dim(v.axis);
  v.inner = X.SizeFromDim(v.axis + 1);
  return v;
}

// Descending by value, NaN first, ties by lower index: a strict weak order
// even with NaNs (the sort must never see an inconsistent comparison).
template <typename T>
bool Before(T a, int64_t ia, T b, int64_t ib) {
  const bool nan_a = a != a, nan_b = b != b;
  if (nan_a != nan_b) return nan_a;
  if (!nan_a && a != b) return a > b;
  return ia < ib;
}

}  // namespace

void TopKOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DOPPIO_ENFORCE(X.ndim() >= 1, "X '", input_name(0), "' must have at least one dim");
  const AxisView v = ViewAround(X, GetSingleArgument<int>("axis", -1));
  const int64_t k = GetSingleArgument<int64_t>("k", -1);
  DOPPIO_ENFORCE(k >= 1, "argument k must be at least 1, got ", k);
  DOPPIO_ENFORCE(k <= v.n, "k argument should not be greater than the axis dim (k = ", k, ", X '",
                 input_name(0), "' has ", v.n, " along axis ", v.axis, ")");
  std::vector<int64_t> dims = X.dims();
  dims[v.axis] = k;
  Tensor* values = Output(0);
  Tensor* indices = Output(1);
  values->Resize(dims);
  indices->Resize(dims);
  int64_t* flat = nullptr;
  if (OutputSize() > 2) {
    Output(2)->Resize({indices->numel()});
    flat = Output(2)->mutable_data<int64_t>();
  }
  int64_t* index_out = indices->mutable_data<int64_t>();
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic<T>::value) {
      const T* x = X.data<T>();
      T* value_out = values->mutable_data<T>();
      std::vector<int64_t> order(v.n);
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
          const T* line = x + o * v.n * v.inner + i;  // element j at line[j * inner]
          std::iota(order.begin(), order.end(), 0);
          std::partial_sort(order.begin(), order.begin() + k, order.end(),
                            [&](int64_t a, int64_t b) {
                              return Before(line[a * v.inner], a, line[b * v.inner], b);
                            });
          for (int64_t j = 0; j < k; ++j) {
            const int64_t at = (o * k + j) * v.inner + i;
            value_out[at] = line[order[j] * v.inner];
            index_out[at] = order[j];
            if (flat != nullptr) flat[at] = (o * v.n + order[j]) * v.inner + i;
          }
        }
      }
    } else {
      DOPPIO_THROW("X '", input_name(0), "' must be numeric, not ", DataTypeName(X.dtype()));
    }
  });
}

void TopKGradientOp::RunOnDevice() {
  const Tensor& dValues = Input(0);
  const Tensor& indices = Input(1);
  const Tensor& X = Input(2);
  DOPPIO_ENFORCE(dValues.dtype() == DataType::kFloat && indices.dtype() == DataType::kInt64 &&
                     dValues.dims() == indices.dims() && X.ndim() == dValues.ndim(),
                 "TopKGradient needs float32 dValues and int64 indices of one shape and X of "
                 "their rank, got ",
                 dValues.DebugString(), ", ", indices.DebugString(), ", ", X.DebugString());
  const AxisView v = ViewAround(X, GetSingleArgument<int>("axis", -1));
  const int64_t k = dValues.dim(v.axis);
  Tensor* dX = Output(0);
  dX->Resize(X.dims());
  float* dx = dX->mutable_data<float>();
  std::fill(dx, dx + dX->numel(), 0.0f);
  const float* dv = dValues.data<float>();
  const int64_t* index = indices.data<int64_t>();
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t at = (o * k + j) * v.inner + i;
        DOPPIO_ENFORCE(0 <= index[at] && index[at] < v.n, "index ", index[at], " of '",
                       input_name(1), "' is outside X's axis of ", v.n);
        dx[(o * v.n + index[at]) * v.inner + i] = dv[at];
      }
    }
  }
}

REGISTER_CPU_OPERATOR(TopK, TopKOp);
REGISTER_CPU_OPERATOR(TopKGradient, TopKGradientOp);

OPERATOR_SCHEMA(TopK)
    .NumInputs(1)
    .NumOutputs(2, 3)
    .Arg("k", "int >= 1: how many entries to keep")
    .Arg("axis", "int: the axis to search (default -1)")
    .Input(0, "X", "a numeric tensor")
    .Output(0, "Values", "the k largest entries along axis, largest first")
    .Output(1, "Indices", "int64: their positions along axis")
    .Output(2, "Flatten_indices", "(optional) int64 [N]: their positions in X, flattened")
    .Doc("The k largest entries along an axis, sorted; ties keep the lower index first.");

OPERATOR_SCHEMA(TopKGradient)
    .NumInputs(3)
    .NumOutputs(1)
    .Input(0, "dValues", "gradient of Values")
    .Input(1, "Indices", "TopK's Indices")
    .Input(2, "X", "TopK's input (its shape)")
    .Output(0, "dX", "dValues scattered to the chosen positions, zeros elsewhere")
    .Doc("Gradient of TopK.");

namespace {

class GetTopKGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  bool CopyArguments() const override { return true; }
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("TopKGradient", "", {GO(0), O(1), I(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(TopK, GetTopKGradient);
SHOULD_NOT_DO_GRADIENT(TopKGradient, "it is a gradient op; second derivatives are not supported");

}  // namespace doppio
