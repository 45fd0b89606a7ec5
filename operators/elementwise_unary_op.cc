// Neg (and Caffe2's Negative), Exp, Log, Sqrt, Sqr, Abs (+ AbsGradient) and Clip (+ ClipGradient).
// The gradients of Neg, Exp, Log, Sqrt and Sqr are built from other ops (Neg,
// Mul, Div, Scale), as in Caffe2.
#include "operators/elementwise_unary_op.h"

#include <cmath>
#include <limits>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_functors.h"

namespace doppio {

namespace {

struct NegFunctor {
  using Types = NumericTypes;
  explicit NegFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return WrappingNegate(x);
  }
};

struct ExpFunctor {
  using Types = FloatTypes;
  explicit ExpFunctor(const OperatorBase&) {}
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kExp}; }
  template <typename T>
  T operator()(T x) const {
    return functors::Exp{}(x);
  }
};

// Negative inputs give nan and 0 gives -inf, as numpy.
struct LogFunctor {
  using Types = FloatTypes;
  explicit LogFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return functors::Log{}(x);
  }
};

struct SqrtFunctor {
  using Types = FloatTypes;
  explicit SqrtFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return functors::Sqrt{}(x);
  }
};

struct SqrFunctor {
  using Types = FloatTypes;
  explicit SqrFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return functors::Sqr{}(x);
  }
};

struct AbsFunctor {
  using Types = NumericTypes;
  explicit AbsFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? WrappingNegate(x) : x;
  }
};

// d|x| = sign(x) dy, with 0 at x = 0 (Caffe2's choice).
struct AbsGradientFunctor {
  using Types = FloatTypes;
  explicit AbsGradientFunctor(const OperatorBase&) {}
  template <typename T>
  T operator()(T x, T dy) const {
    return x > T(0) ? dy : (x < T(0) ? -dy : T(0));
  }
};

// Clip's bounds, read as Caffe2 does: float arguments defaulting to the
// widest float range.
struct ClipBounds {
  explicit ClipBounds(const OperatorBase& op)
      : min(op.GetSingleArgument<float>("min", std::numeric_limits<float>::lowest())),
        max(op.GetSingleArgument<float>("max", std::numeric_limits<float>::max())) {
    DOPPIO_ENFORCE(min <= max, "argument 'min' (", min, ") is greater than 'max' (", max, ")");
  }
  float min, max;
};

struct ClipFunctor : ClipBounds {
  using Types = FloatTypes;
  using ClipBounds::ClipBounds;
  EltwiseFn Dnnl() const { return {EltwiseAlgorithm::kClip, min, max}; }
  template <typename T>
  T operator()(T x) const {
    // nan stays nan, as numpy.clip.
    return x < T(min) ? T(min) : (x > T(max) ? T(max) : x);
  }
};

// dY passes where the output is strictly inside (min, max), as in Caffe2.
struct ClipGradientFunctor : ClipBounds {
  using Types = FloatTypes;
  using ClipBounds::ClipBounds;
  template <typename T>
  T operator()(T y, T dy) const {
    return (y > T(min) && y < T(max)) ? dy : T(0);
  }
};

}  // namespace

REGISTER_CPU_OPERATOR(Neg, UnaryElementwiseOp<NegFunctor>);
REGISTER_CPU_OPERATOR(Negative, UnaryElementwiseOp<NegFunctor>);  // Caffe2's name
REGISTER_CPU_OPERATOR(Exp, UnaryElementwiseOp<ExpFunctor>);
REGISTER_CPU_OPERATOR(Log, UnaryElementwiseOp<LogFunctor>);
REGISTER_CPU_OPERATOR(Sqrt, UnaryElementwiseOp<SqrtFunctor>);
REGISTER_CPU_OPERATOR(Sqr, UnaryElementwiseOp<SqrFunctor>);
REGISTER_CPU_OPERATOR(Abs, UnaryElementwiseOp<AbsFunctor>);
REGISTER_CPU_OPERATOR(AbsGradient, UnaryGradientOp<AbsGradientFunctor>);
REGISTER_CPU_OPERATOR(Clip, UnaryElementwiseOp<ClipFunctor>);
REGISTER_CPU_OPERATOR(ClipGradient, UnaryGradientOp<ClipGradientFunctor>);

namespace {

std::function<void(OpSchema&)> UnarySchema(const char* formula, const char* types) {
  return [formula, types](OpSchema& schema) {
    schema.NumInputs(1)
        .NumOutputs(1)
        .IdenticalTypeAndShape()
        .Elementwise()
        .Input(0, "X", MakeString("input tensor (", types, ")"))
        .Output(0, "Y", MakeString(formula, ", of X's shape and type"))
        .Doc(MakeString("Elementwise ", formula, "."));
  };
}

}  // namespace

OPERATOR_SCHEMA(Neg)
    .AllowInplace({{0, 0}})
    .Apply(UnarySchema("Y = -X", "float32, float64, int32 or int64"));
OPERATOR_SCHEMA(Negative).AllowInplace({{0, 0}}).Apply(
    UnarySchema("Y = -X (Caffe2's name for Neg)", "float32, float64, int32 or int64"));
OPERATOR_SCHEMA(Exp).AllowInplace({{0, 0}}).Apply(UnarySchema("Y = exp(X)", "float32 or float64"));
OPERATOR_SCHEMA(Log)
    .AllowInplace({{0, 0}})
    .Apply(UnarySchema("Y = log(X)", "float32 or float64"))
    .Doc("Elementwise natural logarithm; as in numpy, log(0) is -inf and the log "
         "of a negative number nan. Its gradient reads X, so in-place Log cannot "
         "be differentiated.");
OPERATOR_SCHEMA(Sqrt)
    .AllowInplace({{0, 0}})
    .Apply(UnarySchema("Y = sqrt(X)", "float32 or float64"));
OPERATOR_SCHEMA(Sqr)
    .AllowInplace({{0, 0}})
    .Apply(UnarySchema("Y = X * X", "float32 or float64"))
    .Doc(
        "Elementwise square. Its gradient reads X, so in-place Sqr cannot be "
        "differentiated.");
// AbsGradient reads X, so Abs does not overwrite it.
OPERATOR_SCHEMA(Abs).Apply(UnarySchema("Y = |X|", "float32, float64, int32 or int64"));
OPERATOR_SCHEMA(AbsGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .IdenticalTypeAndShape()
    .Input(0, "X", "Abs's input")
    .Input(1, "dY", "gradient of Abs's output")
    .Output(0, "dX", "sign(X) * dY (0 where X is 0)")
    .Doc("Gradient of Abs.");

OPERATOR_SCHEMA(Clip)
    .AllowInplace({{0, 0}})
    .Apply(UnarySchema("Y = min(max(X, min), max)", "float32 or float64"))
    .Arg("min", "(float, default: lowest float) values below become min")
    .Arg("max", "(float, default: largest float) values above become max");
OPERATOR_SCHEMA(ClipGradient)
    .NumInputs(2)
    .NumOutputs(1)
    .AllowInplace({{1, 0}})
    .IdenticalTypeAndShape()
    .Arg("min", "(float) Clip's min")
    .Arg("max", "(float) Clip's max")
    .Input(0, "Y", "Clip's output")
    .Input(1, "dY", "gradient of Clip's output")
    .Output(0, "dX", "dY where min < Y < max, else 0")
    .Doc("Gradient of Clip: the output gradient passes where the input was not "
         "clipped.");

namespace {

// Neg and Negative: the gradient is the same op on dY.
class GetNegGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef(Def().type(), "", {GO(0)}, {GI(0)});
  }
};

class GetExpGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // d exp(x) = exp(x) dy: the output is all it needs, so in place is fine.
    return SingleGradientDef("Mul", "", {O(0), GO(0)}, {GI(0)});
  }
};

class GetLogGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op Log: cannot differentiate Log computed in place over '",
                   O(0), "': its gradient dY / X needs the input");
    return SingleGradientDef("Div", "", {GO(0), I(0)}, {GI(0)});
  }
};

class GetSqrtGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    // d sqrt(x) = dy / (2 sqrt(x)) = (0.5 dy) / Y.
    std::vector<OperatorDef> ops = SingleGradientDef("Scale", "", {GO(0)}, {GI(0)});
    Argument* scale = ops[0].add_arg();
    scale->set_name("scale");
    scale->set_f(0.5f);
    ops.push_back(SingleGradientDef("Div", "", {GI(0), O(0)}, {GI(0)})[0]);
    return ops;
  }
};

class GetSqrGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    DOPPIO_ENFORCE(I(0) != O(0), "op Sqr: cannot differentiate Sqr computed in place over '", O(0),
                   "': its gradient 2 X dY needs the input");
    // d x^2 = 2 x dy: (2 dY) * X.
    std::vector<OperatorDef> ops = SingleGradientDef("Scale", "", {GO(0)}, {GI(0)});
    Argument* scale = ops[0].add_arg();
    scale->set_name("scale");
    scale->set_f(2.0f);
    ops.push_back(SingleGradientDef("Mul", "", {GI(0), I(0)}, {GI(0)})[0]);
    return ops;
  }
};

class GetAbsGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("AbsGradient", "", {I(0), GO(0)}, {GI(0)});
  }
};

class GetClipGradient final : public GradientMakerBase {
  using GradientMakerBase::GradientMakerBase;
  std::vector<OperatorDef> GetGradientDefs() override {
    return SingleGradientDef("ClipGradient", "", {O(0), GO(0)}, {GI(0)}, Def().arg());
  }
};

constexpr const char kSecondOrder[] =
    "it is a gradient op; second derivatives are not supported";

}  // namespace

REGISTER_GRADIENT(Neg, GetNegGradient);
REGISTER_GRADIENT(Negative, GetNegGradient);
REGISTER_GRADIENT(Exp, GetExpGradient);
REGISTER_GRADIENT(Log, GetLogGradient);
REGISTER_GRADIENT(Sqrt, GetSqrtGradient);
REGISTER_GRADIENT(Sqr, GetSqrGradient);
REGISTER_GRADIENT(Abs, GetAbsGradient);
REGISTER_GRADIENT(Clip, GetClipGradient);
SHOULD_NOT_DO_GRADIENT(AbsGradient, kSecondOrder);
SHOULD_NOT_DO_GRADIENT(ClipGradient, kSecondOrder);

}  // namespace doppio
