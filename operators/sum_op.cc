#include "operators/sum_op.h"

#include <algorithm>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/math_functors.h"
#include "operators/op_cost.h"
#include "operators/parallel_for.h"

namespace doppio {

namespace {

// y = x0 + x1 + ... in one pass, each element added in input order (the
// order the bits depend on), across the intra-op threads. A block of the
// sum is complete before it is written, so y may alias any input.
template <typename T>
void SumInputs(const std::vector<const T*>& x, int64_t count, T* y) {
  constexpr int64_t kBlock = 1024;
  const functors::SumTerm add;
  ParallelFor(count, [&](int64_t begin, int64_t end) {
    T block[kBlock];
    for (int64_t start = begin; start < end; start += kBlock) {
      const int64_t n = std::min(kBlock, end - start);
      const T* x0 = x[0] + start;
      if (x.size() == 1) {
        std::copy(x0, x0 + n, y + start);
        continue;
      }
      const T* x1 = x[1] + start;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) block[i] = add(x0[i], x1[i]);
      for (size_t k = 2; k < x.size(); ++k) {
        const T* xk = x[k] + start;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) block[i] = add(block[i], xk[i]);
      }
      std::copy(block, block + n, y + start);
    }
  });
}

}  // namespace

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
    std::vector<const T*> x;
    for (int i = 0; i < InputSize(); ++i) x.push_back(Input(i).data<T>());
    Tensor* output = Output(0);
    // In place (output is input 0) this keeps the storage and its values.
    output->Resize(first.dims());
    T* y = output->mutable_data<T>();
    if (InputSize() == 1 && y == x[0]) return;
    SumInputs<T>(x, first.numel(), y);
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

OPERATOR_SCHEMA(Sum).LowPrecisionInFloat32()
    .Elementwise()
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
