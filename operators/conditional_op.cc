#include "operators/conditional_op.h"

#include <algorithm>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"

namespace doppio {

void ConditionalOp::RunOnDevice() {
  const Tensor& condition = Input(0);
  const Tensor& data_t = Input(1);
  const Tensor& data_f = Input(2);
  DOPPIO_ENFORCE(condition.ndim() == 1 && condition.dtype() == DataType::kBool, "Condition '",
                 input_name(0), "' must be a 1-D bool tensor, not ", condition.DebugString());
  DOPPIO_ENFORCE(data_t.ndim() >= 1 && data_t.dim(0) == condition.dim(0), "DataT '", input_name(1),
                 "' ", data_t.dims(), " must have one row per condition (", condition.dim(0), ")");
  DOPPIO_ENFORCE(data_f.dims() == data_t.dims() && data_f.dtype() == data_t.dtype(), "DataF '",
                 input_name(2), "' ", data_f.DebugString(), " must match DataT ",
                 data_t.DebugString());
  Tensor* out = Output(0);
  out->ResizeLike(data_t);
  const bool* pick = condition.data<bool>();
  const int64_t row = data_t.SizeFromDim(1);
  DispatchDataType(data_t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* t = data_t.data<T>();
    const T* f = data_f.data<T>();
    T* y = out->mutable_data<T>();
    for (int64_t i = 0; i < condition.dim(0); ++i) {
      const T* from = (pick[i] ? t : f) + i * row;
      std::copy(from, from + row, y + i * row);
    }
  });
}

REGISTER_CPU_OPERATOR(Conditional, ConditionalOp);

OPERATOR_SCHEMA(Conditional)
    .NumInputs(3)
    .NumOutputs(1)
    .Input(0, "Condition", "bool [N]: which tensor each row comes from")
    .Input(1, "DataT", "[N, ...]: rows used where the condition is true")
    .Input(2, "DataF", "DataT's shape and dtype: rows used where it is false")
    .Output(0, "DataO", "the chosen rows")
    .Doc("Row-wise choice between two tensors by a bool per row.");

NO_GRADIENT(Conditional, "Caffe2 gives it none: its inputs get no gradient");

}  // namespace doppio
