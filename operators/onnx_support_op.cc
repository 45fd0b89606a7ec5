// Unary math (Sin ... Erf, Floor, Ceil, Round, Sign), Where, Expand (+
// ExpandGradient), ArgMax and ArgMin: the ops ONNX import needs beyond the
// rest of the library (see onnx_support_op.h).
#include "operators/onnx_support_op.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/argument.h"
#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_ops_utils.h"
#include "operators/elementwise_unary_op.h"
#include "operators/op_type_dispatch.h"

namespace doppio {

// ---------------------------------------------------------------- unary math

namespace {

// A unary function and its derivative, for UnaryElementwiseOp (forward) and
// UnaryGradientOp (dX = f'(X) * dY).
template <class Math>
struct MathFunctor {
  using Types = FloatTypes;
  explicit MathFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return Math::Value(x);
  }
};

template <class Math>
struct MathGradientFunctor {
  using Types = FloatTypes;
  explicit MathGradientFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x, T dy) const {
    return Math::Derivative(x) * dy;
  }
};

// Outside their domains (|x| > 1 for Asin, x < 1 for Acosh ...) these give
// nan, and the derivatives at the domain's edges inf, as numpy does.
struct SinMath {
  template <typename T> static T Value(T x) { return std::sin(x); }
  template <typename T> static T Derivative(T x) { return std::cos(x); }
};
struct CosMath {
  template <typename T> static T Value(T x) { return std::cos(x); }
  template <typename T> static T Derivative(T x) { return -std::sin(x); }
};
struct TanMath {
  template <typename T> static T Value(T x) { return std::tan(x); }
  template <typename T> static T Derivative(T x) { return T(1) / (std::cos(x) * std::cos(x)); }
};
struct AsinMath {
  template <typename T> static T Value(T x) { return std::asin(x); }
  template <typename T> static T Derivative(T x) { return T(1) / std::sqrt(T(1) - x * x); }
};
struct AcosMath {
  template <typename T> static T Value(T x) { return std::acos(x); }
  template <typename T> static T Derivative(T x) { return T(-1) / std::sqrt(T(1) - x * x); }
};
struct AtanMath {
  template <typename T> static T Value(T x) { return std::atan(x); }
  template <typename T> static T Derivative(T x) { return T(1) / (T(1) + x * x); }
};
struct SinhMath {
  template <typename T> static T Value(T x) { return std::sinh(x); }
  template <typename T> static T Derivative(T x) { return std::cosh(x); }
};
struct CoshMath {
  template <typename T> static T Value(T x) { return std::cosh(x); }
  template <typename T> static T Derivative(T x) { return std::sinh(x); }
};
struct AsinhMath {
  template <typename T> static T Value(T x) { return std::asinh(x); }
  template <typename T> static T Derivative(T x) { return T(1) / std::sqrt(x * x + T(1)); }
};
struct AcoshMath {
  template <typename T> static T Value(T x) { return std::acosh(x); }
  template <typename T> static T Derivative(T x) { return T(1) / std::sqrt(x * x - T(1)); }
};
struct AtanhMath {
  template <typename T> static T Value(T x) { return std::atanh(x); }
  template <typename T> static T Derivative(T x) { return T(1) / (T(1) - x * x); }
};
struct ErfMath {
  template <typename T> static T Value(T x) { return std::erf(x); }
  template <typename T> static T Derivative(T x) {
    // d erf(x) = 2 / sqrt(pi) * exp(-x^2)
    return T(1.1283791670955126) * std::exp(-x * x);
  }
};

// Piecewise-constant functions: forward only.
template <class Math, class TypeList>
struct StepFunctor {
  using Types = TypeList;
  explicit StepFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return Math::Value(x);
  }
};
struct FloorMath {
  template <typename T> static T Value(T x) { return std::floor(x); }
};
struct CeilMath {
  template <typename T> static T Value(T x) { return std::ceil(x); }
};
// Halves round to even (numpy.round, ONNX Round): nearbyint under the
// default rounding mode, which nothing in Doppio changes.
struct RoundMath {
  template <typename T> static T Value(T x) { return std::nearbyint(x); }
};
struct SignMath {
  template <typename T> static T Value(T x) {
    if (x > T(0)) return T(1);
    if (x < T(0)) return T(-1);
    return x;  // 0 stays 0 and nan stays nan, as numpy.sign.
  }
};

std::function<void(OpSchema&)> MathSchema(const char* formula, const char* types) {
  return [formula, types](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .IdenticalTypeAndShape()
        .Input(0, "X", MakeString("input tensor (", types, ")"))
        .Output(0, "Y", MakeString(formula, ", of X's shape and type"))
        .Doc(MakeString("Elementwise ", formula, "."));
  };
}

std::function<void(OpSchema&)> MathGradientSchema(const char* forward, const char* derivative) {
  return [forward, derivative](OpSchema& schema) {
    schema.NumInputs(2)
        .NumOutputs(1)
        .AllowInplace({{1, 0}})
        .IdenticalTypeAndShape()
        .Input(0, "X", MakeString(forward, "'s input"))
        .Input(1, "dY", MakeString("gradient of ", forward, "'s output"))
        .Output(0, "dX", MakeString(derivative, " * dY"))
        .Doc(MakeString("Gradient of ", forward, "."));
  };
}

// Every math op's gradient is <type>Gradient(X, dY); the forward input is
// read, so the forward op must not have overwritten it.
class GetMathGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op ", Def().type(), ": cannot differentiate ",
                   Def().type(), " computed in place over '", O(0),
                   "': its gradient reads the input");
    return SingleGradientDef(Def().type() + "Gradient", "", {I(0), GO(0)}, {GI(0)});
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";
constexpr const char kPiecewiseConstant[] =
    "it is piecewise constant: its derivative is zero wherever it exists";

}  // namespace

REGISTER_CPU_OPERATOR(Sin, UnaryElementwiseOp<MathFunctor<SinMath>>);
REGISTER_CPU_OPERATOR(Cos, UnaryElementwiseOp<MathFunctor<CosMath>>);
REGISTER_CPU_OPERATOR(Tan, UnaryElementwiseOp<MathFunctor<TanMath>>);
REGISTER_CPU_OPERATOR(Asin, UnaryElementwiseOp<MathFunctor<AsinMath>>);
REGISTER_CPU_OPERATOR(Acos, UnaryElementwiseOp<MathFunctor<AcosMath>>);
REGISTER_CPU_OPERATOR(Atan, UnaryElementwiseOp<MathFunctor<AtanMath>>);
REGISTER_CPU_OPERATOR(Sinh, UnaryElementwiseOp<MathFunctor<SinhMath>>);
REGISTER_CPU_OPERATOR(Cosh, UnaryElementwiseOp<MathFunctor<CoshMath>>);
REGISTER_CPU_OPERATOR(Asinh, UnaryElementwiseOp<MathFunctor<AsinhMath>>);
REGISTER_CPU_OPERATOR(Acosh, UnaryElementwiseOp<MathFunctor<AcoshMath>>);
REGISTER_CPU_OPERATOR(Atanh, UnaryElementwiseOp<MathFunctor<AtanhMath>>);
REGISTER_CPU_OPERATOR(Erf, UnaryElementwiseOp<MathFunctor<ErfMath>>);
REGISTER_CPU_OPERATOR(SinGradient, UnaryGradientOp<MathGradientFunctor<SinMath>>);
REGISTER_CPU_OPERATOR(CosGradient, UnaryGradientOp<MathGradientFunctor<CosMath>>);
REGISTER_CPU_OPERATOR(TanGradient, UnaryGradientOp<MathGradientFunctor<TanMath>>);
REGISTER_CPU_OPERATOR(AsinGradient, UnaryGradientOp<MathGradientFunctor<AsinMath>>);
REGISTER_CPU_OPERATOR(AcosGradient, UnaryGradientOp<MathGradientFunctor<AcosMath>>);
REGISTER_CPU_OPERATOR(AtanGradient, UnaryGradientOp<MathGradientFunctor<AtanMath>>);
REGISTER_CPU_OPERATOR(SinhGradient, UnaryGradientOp<MathGradientFunctor<SinhMath>>);
REGISTER_CPU_OPERATOR(CoshGradient, UnaryGradientOp<MathGradientFunctor<CoshMath>>);
REGISTER_CPU_OPERATOR(AsinhGradient, UnaryGradientOp<MathGradientFunctor<AsinhMath>>);
REGISTER_CPU_OPERATOR(AcoshGradient, UnaryGradientOp<MathGradientFunctor<AcoshMath>>);
REGISTER_CPU_OPERATOR(AtanhGradient, UnaryGradientOp<MathGradientFunctor<AtanhMath>>);
REGISTER_CPU_OPERATOR(ErfGradient, UnaryGradientOp<MathGradientFunctor<ErfMath>>);
REGISTER_CPU_OPERATOR(Floor, UnaryElementwiseOp<StepFunctor<FloorMath, FloatTypes>>);
REGISTER_CPU_OPERATOR(Ceil, UnaryElementwiseOp<StepFunctor<CeilMath, FloatTypes>>);
REGISTER_CPU_OPERATOR(Round, UnaryElementwiseOp<StepFunctor<RoundMath, FloatTypes>>);
REGISTER_CPU_OPERATOR(Sign, UnaryElementwiseOp<StepFunctor<SignMath, NumericTypes>>);

// The gradients read X, so the forward ops do not run in place.
OPERATOR_SCHEMA(Sin).Apply(MathSchema("Y = sin(X)", "float32 or float64"));
OPERATOR_SCHEMA(Cos).Apply(MathSchema("Y = cos(X)", "float32 or float64"));
OPERATOR_SCHEMA(Tan).Apply(MathSchema("Y = tan(X)", "float32 or float64"));
OPERATOR_SCHEMA(Asin).Apply(MathSchema("Y = arcsin(X)", "float32 or float64; nan outside [-1, 1]"));
OPERATOR_SCHEMA(Acos).Apply(MathSchema("Y = arccos(X)", "float32 or float64; nan outside [-1, 1]"));
OPERATOR_SCHEMA(Atan).Apply(MathSchema("Y = arctan(X)", "float32 or float64"));
OPERATOR_SCHEMA(Sinh).Apply(MathSchema("Y = sinh(X)", "float32 or float64"));
OPERATOR_SCHEMA(Cosh).Apply(MathSchema("Y = cosh(X)", "float32 or float64"));
OPERATOR_SCHEMA(Asinh).Apply(MathSchema("Y = arcsinh(X)", "float32 or float64"));
OPERATOR_SCHEMA(Acosh).Apply(MathSchema("Y = arccosh(X)", "float32 or float64; nan below 1"));
OPERATOR_SCHEMA(Atanh).Apply(
    MathSchema("Y = arctanh(X)", "float32 or float64; nan outside [-1, 1]"));
OPERATOR_SCHEMA(Erf).Apply(
    MathSchema("Y = erf(X), the Gauss error function", "float32 or float64"));
OPERATOR_SCHEMA(SinGradient).Apply(MathGradientSchema("Sin", "cos(X)"));
OPERATOR_SCHEMA(CosGradient).Apply(MathGradientSchema("Cos", "-sin(X)"));
OPERATOR_SCHEMA(TanGradient).Apply(MathGradientSchema("Tan", "1 / cos(X)^2"));
OPERATOR_SCHEMA(AsinGradient).Apply(MathGradientSchema("Asin", "1 / sqrt(1 - X^2)"));
OPERATOR_SCHEMA(AcosGradient).Apply(MathGradientSchema("Acos", "-1 / sqrt(1 - X^2)"));
OPERATOR_SCHEMA(AtanGradient).Apply(MathGradientSchema("Atan", "1 / (1 + X^2)"));
OPERATOR_SCHEMA(SinhGradient).Apply(MathGradientSchema("Sinh", "cosh(X)"));
OPERATOR_SCHEMA(CoshGradient).Apply(MathGradientSchema("Cosh", "sinh(X)"));
OPERATOR_SCHEMA(AsinhGradient).Apply(MathGradientSchema("Asinh", "1 / sqrt(X^2 + 1)"));
OPERATOR_SCHEMA(AcoshGradient).Apply(MathGradientSchema("Acosh", "1 / sqrt(X^2 - 1)"));
OPERATOR_SCHEMA(AtanhGradient).Apply(MathGradientSchema("Atanh", "1 / (1 - X^2)"));
OPERATOR_SCHEMA(ErfGradient).Apply(MathGradientSchema("Erf", "2 / sqrt(pi) * exp(-X^2)"));
OPERATOR_SCHEMA(Floor)
    .AllowInplace({{0, 0}})
    .Apply(MathSchema("Y = floor(X)", "float32 or float64"));
OPERATOR_SCHEMA(Ceil)
    .AllowInplace({{0, 0}})
    .Apply(MathSchema("Y = ceil(X)", "float32 or float64"));
OPERATOR_SCHEMA(Round)
    .AllowInplace({{0, 0}})
    .Apply(MathSchema("Y = X rounded to the nearest integer, halves to even (numpy.round)",
                      "float32 or float64"));
OPERATOR_SCHEMA(Sign)
    .AllowInplace({{0, 0}})
    .Apply(MathSchema("Y = sign(X): -1, 0 or 1 (nan stays nan)",
                      "float32, float64, int32 or int64"));

REGISTER_GRADIENT(Sin, GetMathGradient);
REGISTER_GRADIENT(Cos, GetMathGradient);
REGISTER_GRADIENT(Tan, GetMathGradient);
REGISTER_GRADIENT(Asin, GetMathGradient);
REGISTER_GRADIENT(Acos, GetMathGradient);
REGISTER_GRADIENT(Atan, GetMathGradient);
REGISTER_GRADIENT(Sinh, GetMathGradient);
REGISTER_GRADIENT(Cosh, GetMathGradient);
REGISTER_GRADIENT(Asinh, GetMathGradient);
REGISTER_GRADIENT(Acosh, GetMathGradient);
REGISTER_GRADIENT(Atanh, GetMathGradient);
REGISTER_GRADIENT(Erf, GetMathGradient);
SHOULD_NOT_DO_GRADIENT(SinGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(CosGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(TanGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AsinGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AcosGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AtanGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(SinhGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(CoshGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AsinhGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AcoshGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(AtanhGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(ErfGradient, kSecondOrder);
NO_GRADIENT(Floor, kPiecewiseConstant);
NO_GRADIENT(Ceil, kPiecewiseConstant);
NO_GRADIENT(Round, kPiecewiseConstant);
NO_GRADIENT(Sign, kPiecewiseConstant);

// --------------------------------------------------------- broadcast helpers

namespace {

// `dims` padded with leading 1s to `rank`.
std::vector<int64_t> AtRank(const std::vector<int64_t>& dims, size_t rank) {
  std::vector<int64_t> out(rank - dims.size(), 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

// Calls visit(out_index, offset) with the offset in a tensor of `dims`
// (already at out's rank, 1 where broadcast) of each element of `out`.
template <typename Visit>
void ForEachBroadcastOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& out,
                            Visit&& visit) {
  broadcast_detail::ForEachBroadcast(
      dims, dims, out, [&](int64_t i, int64_t offset, int64_t) { visit(i, offset); });
}

}  // namespace

// ---------------------------------------------------------------------- Where

void WhereOp::RunOnDevice() {
  const Tensor& C = Input(0);
  const Tensor& X = Input(1);
  const Tensor& Y = Input(2);
  DOPPIO_ENFORCE(C.dtype() == DataType::kBool, "condition '", input_name(0), "' holds ",
                 DataTypeName(C.dtype()), "; it must be bool");
  EnforceSameType(*this, 1, X, 2, Y);
  const std::vector<int64_t> cx =
      NumpyBroadcastDims(*this, {input_name(0), C.dims()}, {input_name(1), X.dims()});
  const std::string cx_name = MakeString("broadcast of '", input_name(0), "' and '",
                                         input_name(1), "'");
  const std::vector<int64_t> out_dims =
      NumpyBroadcastDims(*this, {cx_name, cx}, {input_name(2), Y.dims()});
  const size_t rank = out_dims.size();
  const std::vector<int64_t> c_dims = AtRank(C.dims(), rank);
  const std::vector<int64_t> x_dims = AtRank(X.dims(), rank);
  const std::vector<int64_t> y_dims = AtRank(Y.dims(), rank);
  // A separate result tensor, so an output that aliases an input of another
  // shape is not resized under the loop.
  Tensor result(out_dims, X.dtype());
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* c = C.data<bool>();
    const T* x = X.data<T>();
    const T* y = Y.data<T>();
    T* out = result.mutable_data<T>();
    // Two passes with one walk each: out = x where c, then y where not c.
    broadcast_detail::ForEachBroadcast(c_dims, x_dims, out_dims,
                                       [&](int64_t i, int64_t ic, int64_t ix) {
                                         if (c[ic]) out[i] = x[ix];
                                       });
    broadcast_detail::ForEachBroadcast(c_dims, y_dims, out_dims,
                                       [&](int64_t i, int64_t ic, int64_t iy) {
                                         if (!c[ic]) out[i] = y[iy];
                                       });
  });
  *Output(0) = std::move(result);
}

REGISTER_CPU_OPERATOR(Where, WhereOp);

OPERATOR_SCHEMA(Where)
    .NumInputs(3)
    .NumOutputs(1)
    .AllowInplace({{1, 0}, {2, 0}})
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      // numpy broadcasting of C, X and Y; incompatible shapes are left to
      // the kernel, which names the blobs.
      TensorShape out;
      out.set_data_type(in.at(1).data_type());
      size_t rank = 0;
      for (const TensorShape& shape : in) {
        if (shape.unknown_shape()) {
          out.set_unknown_shape(true);
          return std::vector<TensorShape>{out};
        }
        rank = std::max<size_t>(rank, shape.dims_size());
      }
      std::vector<int64_t> dims(rank, 1);
      for (const TensorShape& shape : in) {
        const size_t offset = rank - shape.dims_size();
        for (int i = 0; i < shape.dims_size(); ++i) {
          if (shape.dims(i) != 1) dims[offset + i] = shape.dims(i);
        }
      }
      for (int64_t d : dims) out.add_dims(d);
      return std::vector<TensorShape>{out};
    })
    .Input(0, "C", "bool condition")
    .Input(1, "X", "values where C is true (any type)")
    .Input(2, "Y", "values where C is false (X's type)")
    .Output(0, "Z", "X where C else Y, in the numpy broadcast shape of C, X and Y")
    .Doc("Elementwise select Z = C ? X : Y with numpy broadcasting of all three "
         "inputs (ONNX Where).");

// As in Caffe2, Where is not differentiated: imported models run forward only.
SHOULD_NOT_DO_GRADIENT(Where, "the gradient of a broadcast select is not implemented; "
                              "Where serves imported (ONNX) models, which run forward");

// --------------------------------------------------------------------- Expand

void ExpandOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const Tensor& shape = Input(1);
  DOPPIO_ENFORCE(shape.ndim() == 1, "shape '", input_name(1), "' must be 1-D, got shape ",
                 shape.dims());
  std::vector<int64_t> requested;
  DispatchTypes(TypeList<int32_t, int64_t>{}, input_name(1), shape.dtype(), [&](auto tag) {
    using Index = typename decltype(tag)::type;
    const Index* values = shape.data<Index>();
    for (int64_t i = 0; i < shape.numel(); ++i) {
      DOPPIO_ENFORCE(values[i] >= 0, "shape '", input_name(1), "' holds ",
                     static_cast<int64_t>(values[i]), " at position ", i,
                     "; dims must not be negative");
      requested.push_back(static_cast<int64_t>(values[i]));
    }
  });
  const std::vector<int64_t> out_dims =
      NumpyBroadcastDims(*this, {input_name(0), X.dims()}, {input_name(1), requested});
  const std::vector<int64_t> x_dims = AtRank(X.dims(), out_dims.size());
  CheckedNumElements(out_dims);
  Tensor result(out_dims, X.dtype());
  DispatchDataType(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* out = result.mutable_data<T>();
    ForEachBroadcastOffset(x_dims, out_dims, [&](int64_t i, int64_t ix) { out[i] = x[ix]; });
  });
  *Output(0) = std::move(result);
}

void ExpandGradientOp::RunOnDevice() {
  const Tensor& dY = Input(0);
  const Tensor& X = Input(1);
  DOPPIO_ENFORCE(dY.ndim() >= X.ndim(), "gradient '", input_name(0), "' of shape ", dY.dims(),
                 " has fewer dims than '", input_name(1), "' of shape ", X.dims());
  const std::vector<int64_t> x_dims = AtRank(X.dims(), dY.dims().size());
  for (size_t i = 0; i < x_dims.size(); ++i) {
    DOPPIO_ENFORCE(x_dims[i] == dY.dims()[i] || x_dims[i] == 1, "'", input_name(1), "' of shape ",
                   X.dims(), " does not expand to the shape ", dY.dims(), " of '", input_name(0),
                   "'");
  }
  DispatchTypes(FloatTypes{}, input_name(0), dY.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor* dX = Output(0);
    dX->Resize(X.dims());
    SumToBroadcastShape(dY.dims(), dY.data<T>(), x_dims, dX->mutable_data<T>());
  });
}

REGISTER_CPU_OPERATOR(Expand, ExpandOp);
REGISTER_CPU_OPERATOR(ExpandGradient, ExpandGradientOp);

OPERATOR_SCHEMA(Expand)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out;
      out.set_data_type(in.at(0).data_type());
      out.set_unknown_shape(true);
      return std::vector<TensorShape>{out};
    })
    .Input(0, "X", "tensor of any type")
    .Input(1, "shape", "1-D int32 or int64 tensor: the shape to broadcast X against")
    .Output(0, "Y", "X broadcast to numpy's broadcast of X's shape and `shape`")
    .Doc("Broadcasts X against a shape given as a tensor, as numpy broadcasting of "
         "two shapes (a 1 in `shape` keeps X's dim): Caffe2's and ONNX's Expand.");
OPERATOR_SCHEMA(ExpandGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .TensorInferenceFunction([](const OperatorDef&, const std::vector<TensorShape>& in) {
      TensorShape out = in.at(1);
      out.set_data_type(in.at(0).data_type());
      return std::vector<TensorShape>{out};
    })
    .Input(0, "dY", "gradient of Expand's output (float32 or float64)")
    .Input(1, "X", "Expand's input, read for its shape only")
    .Output(0, "dX", "dY summed over the dims Expand stretched, in X's shape")
    .Doc("Gradient of Expand.");

namespace {

class GetExpandGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ExpandGradient", "", {GO(0), I(0)}, {GI(0)});
  }
};

}  // namespace

REGISTER_GRADIENT(Expand, GetExpandGradient);
SHOULD_NOT_DO_GRADIENT(ExpandGradient, kSecondOrder);

// ------------------------------------------------------------- ArgMax/ArgMin

std::vector<int64_t> ArgReduceOutputDims(const std::string& op_type,
                                         const std::vector<int64_t>& dims, int axis,
                                         bool keepdims) {
  const int rank = static_cast<int>(dims.size());
  DOPPIO_ENFORCE(rank >= 1, "op ", op_type, ": the input is a scalar; it needs rank >= 1");
  DOPPIO_ENFORCE(axis >= -rank && axis < rank, "op ", op_type, ": axis ", axis,
                 " is out of range for an input of shape ", dims);
  const int canonical = axis < 0 ? axis + rank : axis;
  DOPPIO_ENFORCE(dims[canonical] > 0, "op ", op_type, ": cannot reduce the empty dim ",
                 canonical, " of an input of shape ", dims);
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d) {
    if (d != canonical) {
      out.push_back(dims[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

ArgReduceOp::ArgReduceOp(const OperatorDef& def, Workspace* workspace)
    : Operator<CPUContext>(def, workspace),
      is_max_(def.type() == "ArgMax"),
      axis_(GetSingleArgument<int>("axis", -1)),
      keepdims_(GetSingleArgument<bool>("keepdims", true)),
      select_last_index_(GetSingleArgument<bool>("select_last_index", false)) {}

void ArgReduceOp::RunOnDevice() {
  const Tensor& X = Input(0);
  const std::vector<int64_t> out_dims = ArgReduceOutputDims(type(), X.dims(), axis_, keepdims_);
  const int axis = X.CanonicalAxis(axis_);
  const int64_t outer = X.SizeToDim(axis);
  const int64_t length = X.dim(axis);
  const int64_t inner = X.SizeFromDim(axis + 1);
  Tensor result(out_dims, DataType::kInt64);
  DispatchTypes(NumericTypes{}, input_name(0), X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    int64_t* out = result.mutable_data<int64_t>();
    // A candidate replaces the best on a strict win, or on a tie when the
    // last index is wanted; nan wins as in numpy (the first nan is kept).
    const auto better = [&](T candidate, T best) {
      if (std::isnan(static_cast<double>(best))) return false;
      if (std::isnan(static_cast<double>(candidate))) return true;
      if (candidate == best) return select_last_index_;
      return is_max_ ? candidate > best : candidate < best;
    };
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = x + o * length * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < length; ++k) {
          if (better(row[k * inner], row[best * inner])) best = k;
        }
        out[o * inner + i] = best;
      }
    }
  });
  *Output(0) = std::move(result);
}

REGISTER_CPU_OPERATOR(ArgMax, ArgReduceOp);
REGISTER_CPU_OPERATOR(ArgMin, ArgReduceOp);

namespace {

std::function<void(OpSchema&)> ArgReduceSchema(const char* extreme) {
  return [extreme](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .TensorInferenceFunction([](const OperatorDef& def, const std::vector<TensorShape>& in) {
          const ArgumentHelper args(def);
          TensorShape out;
          out.set_data_type(TensorProto::INT64);
          std::vector<int64_t> dims(in.at(0).dims().begin(), in.at(0).dims().end());
          try {
            for (int64_t d : ArgReduceOutputDims(def.type(), dims,
                                                 args.GetSingle<int>("axis", -1),
                                                 args.GetSingle<bool>("keepdims", true))) {
              out.add_dims(d);
            }
          } catch (const Error&) {
            out.set_unknown_shape(true);  // inference is advisory; the op reports it
          }
          return std::vector<TensorShape>{out};
        })
        .Arg("axis", "(int, default -1) the axis to reduce; negative counts from the end")
        .Arg("keepdims", "(bool, default 1) keep the reduced axis as a dim of size 1")
        .Arg("select_last_index",
             "(bool, default 0) on ties, the last index instead of the first (ONNX)")
        .Input(0, "X", "tensor of float32, float64, int32 or int64, rank >= 1")
        .Output(0, "indices", MakeString("int64 index of the ", extreme,
                                         " element along `axis`"))
        .Doc(MakeString("Index of the ", extreme, " element of X along `axis` (nan counts as ",
                        "the ", extreme, ", as in numpy)."));
  };
}

}  // namespace

OPERATOR_SCHEMA(ArgMax).Apply(ArgReduceSchema("largest"));
OPERATOR_SCHEMA(ArgMin).Apply(ArgReduceSchema("smallest"));
NO_GRADIENT(ArgMax, "its output is an index, a step function of the input");
NO_GRADIENT(ArgMin, "its output is an index, a step function of the input");

}  // namespace doppio
