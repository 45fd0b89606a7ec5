#include "operators/reduce_elements_op.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/op_type_dispatch.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

namespace {

// X viewed as B matrices [M, N]; Y holds one max per row (rowwise) or per
// column.
struct MatrixMaxPlan {
  int64_t B = 1, M = 0, N = 0;
  std::vector<int64_t> y_dims;
  int64_t y_count() const { return B * y_dims.back(); }
};

MatrixMaxPlan PlanMatrixMax(const std::string& op, const std::string& x_name,
                            const std::vector<int64_t>& x_dims, bool rowwise) {
  const size_t rank = x_dims.size();
  DOPPIO_ENFORCE(rank == 3 || rank == 2, "op ", op, ": input X ('", x_name, "') has shape ",
                 x_dims, " but should be [B, M, N] (or a single matrix [M, N])");
  MatrixMaxPlan plan;
  if (rank == 3) plan.B = x_dims[0];
  plan.M = x_dims[rank - 2];
  plan.N = x_dims[rank - 1];
  if (rank == 3) plan.y_dims.push_back(plan.B);
  plan.y_dims.push_back(rowwise ? plan.M : plan.N);
  const int64_t reduced = rowwise ? plan.N : plan.M;
  DOPPIO_ENFORCE(reduced > 0 || plan.y_count() == 0, "op ", op, ": the max over an empty ",
                 rowwise ? "row" : "column", " is undefined; X ('", x_name,
                 "') has shape ", x_dims);
  return plan;
}

// Calls fn(x_index, y_index) for every element of X.
template <typename Fn>
void ForEachMatrixElement(const MatrixMaxPlan& plan, bool rowwise, Fn&& fn) {
  for (int64_t b = 0; b < plan.B; ++b) {
    for (int64_t m = 0; m < plan.M; ++m) {
      const int64_t row = (b * plan.M + m) * plan.N;
      const int64_t y_base = rowwise ? b * plan.M + m : b * plan.N;
      for (int64_t n = 0; n < plan.N; ++n) fn(row + n, rowwise ? y_base : y_base + n);
    }
  }
}

}  // namespace

// ---- SumElements ----

SumElementsOp::SumElementsOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), average_(GetSingleArgument<bool>("average", false)) {}

void SumElementsOp::RunOnDevice() {
  const Tensor& X = Input(0);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    // Accumulate in double: float sums of many elements drift.
    double sum = 0;
    for (int64_t i = 0; i < X.numel(); ++i) sum += x[i];
    if (average_) sum /= static_cast<double>(X.numel());  // empty: 0/0 = NaN
    Tensor* Y = Output(0);
    Y->Resize({});
    *Y->mutable_data<T>() = static_cast<T>(sum);
  });
}

SumElementsGradientOp::SumElementsGradientOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace), average_(GetSingleArgument<bool>("average", false)) {}

void SumElementsGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& dSum = Input(1);
  DOPPIO_ENFORCE(dSum.numel() == 1, "the gradient of the sum ('", input_name(1),
                 "') should hold one element but has shape ", dSum.dims());
  EnforceSameType(*this, 0, X, 1, dSum);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T value = *dSum.data<T>();
    if (average_) value /= static_cast<T>(X.numel());
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->mutable_data<T>();
    std::fill(dx, dx + X.numel(), value);
  });
}

// ---- RowwiseMax / ColwiseMax ----

void MatrixMaxOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const MatrixMaxPlan plan = PlanMatrixMax(type(), input_name(0), X.dims(), rowwise_);
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(plan.y_dims);
    T* y = Y->mutable_data<T>();
    std::fill(y, y + plan.y_count(), std::numeric_limits<T>::lowest());
    ForEachMatrixElement(plan, rowwise_,
                         [&](int64_t xi, int64_t yi) { y[yi] = std::max(y[yi], x[xi]); });
  });
}

void MatrixMaxGradientOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& Y = Input(1);
  const Tensor& dY = Input(2);
  const MatrixMaxPlan plan = PlanMatrixMax(type(), input_name(0), X.dims(), rowwise_);
  for (int i = 1; i < 3; ++i) {
    const Tensor& given = Input(i);
    DOPPIO_ENFORCE(given.numel() == plan.y_count(), "input ", i, " ('", input_name(i),
                   "') has shape ", given.dims(), " but the ", rowwise_ ? "row" : "column",
                   " maxima of X ('", input_name(0), "') ", X.dims(), " have shape ", plan.y_dims);
    EnforceSameType(*this, 0, X, i, given);
  }
  DispatchInput(FloatTypes{}, *this, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* y = Y.data<T>();
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->mutable_data<T>();
    // Every element equal to the max takes the gradient (Caffe2's rule).
    ForEachMatrixElement(plan, rowwise_, [&](int64_t xi, int64_t yi) {
      dx[xi] = x[xi] == y[yi] ? dy[yi] : T(0);
    });
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(SumElements, SumElementsOp);
REGISTER_CPU_OPERATOR(SumElementsGradient, SumElementsGradientOp);
REGISTER_CPU_OPERATOR(RowwiseMax, RowwiseMaxOp);
REGISTER_CPU_OPERATOR(RowwiseMaxGradient, RowwiseMaxGradientOp);
REGISTER_CPU_OPERATOR(ColwiseMax, ColwiseMaxOp);
REGISTER_CPU_OPERATOR(ColwiseMaxGradient, ColwiseMaxGradientOp);

namespace {

OpSchema::InferenceFunction MatrixMaxInference(bool rowwise) {
  return [rowwise](const OperatorDef& def, const std::vector<TensorShape>& in) {
    const MatrixMaxPlan plan = PlanMatrixMax(def.type(), def.input(0), DimsOf(in.at(0)), rowwise);
    return std::vector<TensorShape>{MakeShape(plan.y_dims, in[0].data_type())};
  };
}

// RowwiseMax and ColwiseMax differ only in the axis they reduce.
std::function<void(OpSchema&)> MatrixMaxSchema(bool rowwise) {
  return [rowwise](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .TensorInferenceFunction(MatrixMaxInference(rowwise))
        .Input(0, "X",
               "float32 or float64 tensor [B, M, N]: B matrices of M rows and N columns "
               "([M, N] is one matrix)")
        .Output(0, "Y",
                rowwise ? "[B, M]: the max of each row of each matrix ([M] for one matrix)"
                        : "[B, N]: the max of each column of each matrix ([N] for one matrix)")
        .Doc(rowwise ? "Row-wise max of a batch of matrices."
                     : "Column-wise max of a batch of matrices.");
  };
}

std::function<void(OpSchema&)> MatrixMaxGradientSchema(bool rowwise) {
  return [rowwise](OpSchema& schema) {
    const char* forward = rowwise ? "RowwiseMax" : "ColwiseMax";
    schema.NumInputs(3)
        .NumOutputs(1)
        .TensorInferenceFunction(ShapeOfInput(0))
        .Input(0, "X", MakeString(forward, "'s input"))
        .Input(1, "Y", MakeString(forward, "'s output"))
        .Input(2, "dY", "gradient of Y")
        .Output(0, "dX", MakeString("dY at each element equal to its ",
                                    rowwise ? "row" : "column", "'s max, else 0"))
        .Doc(MakeString("Gradient of ", forward, "."));
  };
}

}  // namespace

OPERATOR_SCHEMA(SumElements)
    .NumInputs(1)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.set_data_type(in.at(0).data_type());
      return std::vector<TensorShape>{out};
    })
    .Arg("average", "(bool, default 0) 1 divides the sum by the number of elements")
    .Input(0, "X", "float32 or float64 tensor to sum up")
    .Output(0, "sum", "0-d tensor: the sum (or mean) of X's elements")
    .Doc("Sums all elements of the input, or averages them with average=1.");

OPERATOR_SCHEMA(SumElementsGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction(ShapeOfInput(0))
    .Arg("average", "SumElements' average")
    .Input(0, "X", "SumElements' input")
    .Input(1, "sum_grad", "gradient of the sum, one element")
    .Output(0, "X_grad", "sum_grad (over X's size with average=1) at every element")
    .Doc("Gradient of SumElements.");

OPERATOR_SCHEMA(RowwiseMax).Apply(MatrixMaxSchema(/*rowwise=*/true));
OPERATOR_SCHEMA(ColwiseMax).Apply(MatrixMaxSchema(/*rowwise=*/false));
OPERATOR_SCHEMA(RowwiseMaxGradient).Apply(MatrixMaxGradientSchema(/*rowwise=*/true));
OPERATOR_SCHEMA(ColwiseMaxGradient).Apply(MatrixMaxGradientSchema(/*rowwise=*/false));

namespace {

class GetSumElementsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("SumElementsGradient", "", {I(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

class GetMatrixMaxGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), O(0), GO(0)}, {GI(0)});
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(SumElements, GetSumElementsGradient);
REGISTER_GRADIENT(RowwiseMax, GetMatrixMaxGradient);
REGISTER_GRADIENT(ColwiseMax, GetMatrixMaxGradient);
SHOULD_NOT_DO_GRADIENT(SumElementsGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(RowwiseMaxGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(ColwiseMaxGradient, kSecondOrder);

}  // namespace doppio
