#include "operators/sum_op.h"

#include <algorithm>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/math_functors.h"
#include "operators/op_cost.h"

namespace doppio {

void SumOp::RunOnDevice() {
  const Tensor& first = Input(0);
  for (int i = 1; i < InputSize(); ++i) {
    const Tensor& other = Input(i);
    DOPPIO_ENFORCE(other.dims() == first.dims(), "input ", i, " ('", input_name(i), "') has shape ",
                   other.dims(), " but input 0 ('", input_name(0), "') has shape ", first.dims(),
                   "; all inputs must have one shape");
    DOPPIO_ENFORCE(other.dtype() == first.dtype(), "input ", i, " ('", input_name(i), "') holds ",
                   DataTypeName(other.dtype()), " but input 0 ('", input_name(0), "') holds ",
                   DataTypeName(first.dtype()), "; all inputs must have one type");
  }
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x0 = first.data<T>();
    Tensor* output = Output(0);
    // In place (output is input 0) this keeps the storage and its values.
    output->Resize(first.dims());
    T* y = output->mutable_data<T>();
    const int64_t count = first.numel();
    if (y != x0) std::copy(x0, x0 + count, y);
    for (int i = 1; i < InputSize(); ++i) functors::CpuSumInto(count, Input(i).data<T>(), y);
  };
  switch (first.dtype()) {
    case DataType::kFloat: return run(TypeTag<float>{});
    case DataType::kDouble: return run(TypeTag<double>{});
    case DataType::kInt32: return run(TypeTag<int32_t>{});
    case DataType::kInt64: return run(TypeTag<int64_t>{});
    default: break;
  }
  DOPPIO_THROW("input 0 ('", input_name(0), "') holds ", DataTypeName(first.dtype()),
               "; supported types are float32, float64, int32 and int64");
}

REGISTER_CPU_OPERATOR(Sum, SumOp);

OPERATOR_SCHEMA(Sum)
    .NumInputs(1, 1 << 30)
    .CostInferenceFunction(CostInferenceForSum)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "data_0", "first of the inputs; may be the output")
    .Output(0, "sum", "elementwise sum of the inputs, of their shape")
    .Doc("Elementwise sum of all inputs, which must share one shape and type. "
         "With input 0 as the output, the sum accumulates in place.");

namespace {

class GetSumGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // d(sum)/d(input i) is the identity: every input takes the output's
    // gradient as is, with no op (as in Caffe2).
    for (int i = 0; i < Def().input_size(); ++i) SetDense(i, GO(0));
    return {};
  }
};

}  // namespace

REGISTER_GRADIENT(Sum, GetSumGradient);

}  // namespace doppio
