#include "operators/reduce_op.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/shape_inference_utils.h"

namespace doppio {

namespace {

// Where each element of X lands in Y: X is walked in order while Y's offset
// advances by y_strides (0 along reduced dims). Runs of dims that are all
// reduced or all kept are merged, so the inner loop is as long as possible.
struct ReducePlan {
  std::vector<int64_t> y_dims;     // Y's shape, as the op outputs it
  std::vector<int64_t> walk_dims;  // X's dims after merging
  std::vector<int64_t> y_strides;  // per walk dim; 0 where reduced
  int64_t x_count = 0;
  int64_t y_count = 0;
  int64_t reduced_count = 1;  // elements of X summed into each element of Y
};

const char* KindName(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return "ReduceSum";
    case ReduceKind::kMean: return "ReduceMean";
    case ReduceKind::kMax: return "ReduceMax";
  }
  return "Reduce";
}

ReducePlan PlanReduce(const std::string& op, const std::string& x_name,
                      const std::vector<int64_t>& x_dims, const std::vector<int>& axes,
                      bool keepdims) {
  const int rank = static_cast<int>(x_dims.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int axis : axes) {
    DOPPIO_ENFORCE(axis >= -rank && axis < rank, "op ", op, ": axes holds ", axis,
                   ", out of range for '", x_name, "' of shape ", x_dims, " (rank ", rank,
                   ")");
    const int canonical = axis < 0 ? axis + rank : axis;
    DOPPIO_ENFORCE(!reduced[canonical], "op ", op, ": axes ", axes, " names dim ", canonical,
                   " of '", x_name, "' twice");
    reduced[canonical] = true;
  }
  ReducePlan plan;
  plan.x_count = 1;
  plan.y_count = 1;
  std::vector<bool> walk_reduced;
  for (int d = 0; d < rank; ++d) {
    plan.x_count *= x_dims[d];
    if (reduced[d]) {
      plan.reduced_count *= x_dims[d];
      if (keepdims) plan.y_dims.push_back(1);
    } else {
      plan.y_count *= x_dims[d];
      plan.y_dims.push_back(x_dims[d]);
    }
    if (!walk_reduced.empty() && walk_reduced.back() == reduced[d]) {
      plan.walk_dims.back() *= x_dims[d];
    } else {
      plan.walk_dims.push_back(x_dims[d]);
      walk_reduced.push_back(reduced[d]);
    }
  }
  plan.y_strides.assign(plan.walk_dims.size(), 0);
  int64_t stride = 1;
  for (size_t d = plan.walk_dims.size(); d-- > 0;) {
    if (!walk_reduced[d]) {
      plan.y_strides[d] = stride;
      stride *= plan.walk_dims[d];
    }
  }
  return plan;
}

// Calls fn(x_index, y_index) for every element of X, in X's order.
template <typename Fn>
void ForEachPair(const ReducePlan& plan, Fn&& fn) {
  if (plan.x_count == 0) return;
  const int rank = static_cast<int>(plan.walk_dims.size());
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0});
    return;
  }
  const int64_t inner = plan.walk_dims[rank - 1];
  const int64_t inner_stride = plan.y_strides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  int64_t y_offset = 0;
  for (int64_t x = 0; x < plan.x_count; x += inner) {
    for (int64_t i = 0; i < inner; ++i) fn(x + i, y_offset + i * inner_stride);
    for (int d = rank - 2; d >= 0; --d) {
      y_offset += plan.y_strides[d];
      if (++index[d] < plan.walk_dims[d]) break;
      y_offset -= plan.y_strides[d] * plan.walk_dims[d];
      index[d] = 0;
    }
  }
}

// Calls fn(TypeTag<T>) for the dtypes `kind` supports: Sum and Max also take
// int32/int64 (as Caffe2), Mean only floats.
template <typename Fn>
void DispatchReduceType(const OperatorBase& op, ReduceKind kind, int input, DataType dtype,
                        Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kInt32:
      if (kind != ReduceKind::kMean) return fn(TypeTag<int32_t>{});
      break;
    case DataType::kInt64:
      if (kind != ReduceKind::kMean) return fn(TypeTag<int64_t>{});
      break;
    default: break;
  }
  DOPPIO_THROW(
      "input ", input, " ('", op.input_name(input), "') holds ", DataTypeName(dtype),
      "; supported types are ",
      kind == ReduceKind::kMean ? "float32 and float64" : "float32, float64, int32 and int64");
}

std::vector<int> ReadAxes(const OperatorBase& op) {
  return op.GetRepeatedArgument<int>("axes", {});
}

}  // namespace

// ---- ReduceSum / ReduceMean / ReduceMax ----

ReduceOp::ReduceOp(const OperatorDef& def, Workspace* workspace, ReduceKind kind)
    : Operator<CPUContext>(def, workspace),
      kind_(kind),
      axes_(ReadAxes(*this)),
      keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {}

void ReduceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const ReducePlan plan = PlanReduce(type(), input_name(0), X.dims(), axes_, keepdims_);
  DispatchReduceType(*this, kind_, 0, X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kind_ == ReduceKind::kMax) {
      DOPPIO_ENFORCE(plan.reduced_count > 0 || plan.y_count == 0,
                     "the max over an empty set is undefined; '", input_name(0), "' has shape ",
                     X.dims(), " and the reduced dims hold no elements");
    }
    const T* x = X.data<T>();
    Tensor* Y = Output(0);
    Y->Resize(plan.y_dims);
    T* y = Y->mutable_data<T>();
    if (kind_ == ReduceKind::kMax) {
      std::fill(y, y + plan.y_count, std::numeric_limits<T>::lowest());
      ForEachPair(plan, [&](int64_t xi, int64_t yi) { y[yi] = std::max(y[yi], x[xi]); });
      return;
    }
    std::fill(y, y + plan.y_count, T(0));
    ForEachPair(plan, [&](int64_t xi, int64_t yi) { y[yi] += x[xi]; });
    if (kind_ == ReduceKind::kMean) {
      // An empty mean is 0/0 = NaN, as in numpy.
      const T count = static_cast<T>(plan.reduced_count);
      for (int64_t i = 0; i < plan.y_count; ++i) y[i] /= count;
    }
  });
}

// ---- ReduceSumGradient / ReduceMeanGradient / ReduceMaxGradient ----

ReduceGradientOp::ReduceGradientOp(const OperatorDef& def, Workspace* workspace,
                                   ReduceKind kind)
    : Operator<CPUContext>(def, workspace),
      kind_(kind),
      axes_(ReadAxes(*this)),
      keepdims_(GetSingleArgument<int>("keepdims", 1) != 0) {}

void ReduceGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(1);
  const Tensor& Y = Input(2);
  const ReducePlan plan = PlanReduce(type(), input_name(1), X.dims(), axes_, keepdims_);
  DOPPIO_ENFORCE(dY.numel() == plan.y_count, "output gradient dY ('", input_name(0),
                 "') has shape ", dY.dims(), " but ", KindName(kind_), " of '", input_name(1), "' ",
                 X.dims(), " gives shape ", plan.y_dims);
  DOPPIO_ENFORCE(dY.dtype() == X.dtype(), "dY ('", input_name(0), "') holds ",
                 DataTypeName(dY.dtype()), " but X ('", input_name(1), "') holds ",
                 DataTypeName(X.dtype()));
  if (kind_ == ReduceKind::kMax) {
    DOPPIO_ENFORCE(Y.numel() == plan.y_count && Y.dtype() == X.dtype(), "forward output Y ('",
                   input_name(2), "') is ", Y.DebugString(), " but ReduceMax of '", input_name(1),
                   "' ", X.DebugString(), " gives shape ", plan.y_dims);
  }
  DispatchReduceType(*this, kind_, 0, dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    T* dx = dX->mutable_data<T>();
    if (kind_ == ReduceKind::kMax) {
      // Every element equal to the max takes the gradient (Caffe2's rule).
      const T* x = X.data<T>();
      const T* y = Y.data<T>();
      ForEachPair(plan, [&](int64_t xi, int64_t yi) {
        dx[xi] = x[xi] == y[yi] ? dy[yi] : T(0);
      });
    } else if (kind_ == ReduceKind::kMean) {
      const T count = static_cast<T>(plan.reduced_count);
      ForEachPair(plan, [&](int64_t xi, int64_t yi) { dx[xi] = dy[yi] / count; });
    } else {
      ForEachPair(plan, [&](int64_t xi, int64_t yi) { dx[xi] = dy[yi]; });
    }
  });
}

// ---- registration ----

REGISTER_CPU_OPERATOR(ReduceSum, ReduceSumOp);
REGISTER_CPU_OPERATOR(ReduceMean, ReduceMeanOp);
REGISTER_CPU_OPERATOR(ReduceMax, ReduceMaxOp);
REGISTER_CPU_OPERATOR(ReduceSumGradient, ReduceSumGradientOp);
REGISTER_CPU_OPERATOR(ReduceMeanGradient, ReduceMeanGradientOp);
REGISTER_CPU_OPERATOR(ReduceMaxGradient, ReduceMaxGradientOp);

namespace {

std::vector<TensorShape> ReduceInference(const OperatorDef& def,
                                         const std::vector<TensorShape>& in) {
  ArgumentHelper args(def);
  const ReducePlan plan =
      PlanReduce(def.type(), def.input(0), DimsOf(in.at(0)), args.GetRepeated<int>("axes"),
                 args.GetSingle<int>("keepdims", 1) != 0);
  return {MakeShape(plan.y_dims, in[0].data_type())};
}

void ReduceSchema(OpSchema& schema, const char* what, const char* types) {
  schema.NumInputs(1)
      .NumOutputs(1)
      .TensorInferenceFunction(ReduceInference)
      .Arg("axes", "(ints, default: all dims) the dims to reduce; negative values "
                   "count from the end")
      .Arg("keepdims", "(int, default 1) 1 keeps each reduced dim as size 1, 0 drops it")
      .Input(0, "data", types)
      .Output(0, "reduced", what)
      .Doc(MakeString("Computes the ", what, " of the input's elements along `axes`. With "
                      "keepdims=1 the result has the input's rank, else the reduced dims "
                      "are dropped."));
}

void ReduceGradientSchema(OpSchema& schema, const char* forward) {
  schema.NumInputs(3)
      .NumOutputs(1)
      .TensorInferenceFunction(ShapeOfInput(1))
      .Arg("axes", "the forward op's axes")
      .Arg("keepdims", "the forward op's keepdims")
      .Input(0, "dY", "gradient of the reduced output")
      .Input(1, "X", "the forward op's input")
      .Input(2, "Y", "the forward op's output")
      .Output(0, "dX", "gradient of X, of X's shape")
      .Doc(MakeString("Gradient of ", forward, "."));
}

constexpr const char kIntOrFloat[] = "input tensor (float32, float64, int32 or int64)";

}  // namespace

OPERATOR_SCHEMA(ReduceSum).Apply([](OpSchema& s) { ReduceSchema(s, "sum", kIntOrFloat); });
OPERATOR_SCHEMA(ReduceMean).Apply([](OpSchema& s) {
  ReduceSchema(s, "mean", "input tensor (float32 or float64)");
});
OPERATOR_SCHEMA(ReduceMax).Apply([](OpSchema& s) { ReduceSchema(s, "max", kIntOrFloat); });
OPERATOR_SCHEMA(ReduceSumGradient).Apply([](OpSchema& s) {
  ReduceGradientSchema(s, "ReduceSum");
});
OPERATOR_SCHEMA(ReduceMeanGradient).Apply([](OpSchema& s) {
  ReduceGradientSchema(s, "ReduceMean");
});
OPERATOR_SCHEMA(ReduceMaxGradient).Apply([](OpSchema& s) {
  ReduceGradientSchema(s, "ReduceMax (elements equal to the max share dY)");
});

namespace {

class GetReduceGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // axes/keepdims travel along so the gradient broadcasts back the same way.
    return SingleGradientDef(Def().type() + "Gradient", "", {GO(0), I(0), O(0)}, {GI(0)},
                             Def().arg());
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(ReduceSum, GetReduceGradient);
REGISTER_GRADIENT(ReduceMean, GetReduceGradient);
REGISTER_GRADIENT(ReduceMax, GetReduceGradient);
SHOULD_NOT_DO_GRADIENT(ReduceSumGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(ReduceMeanGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(ReduceMaxGradient, kSecondOrder);

}  // namespace doppio
