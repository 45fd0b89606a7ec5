// EQ, NE, LT, LE, GT, GE, And, Or, Xor (numpy or legacy broadcasting) and
// Not. None has a gradient: their outputs are booleans.
#include "operators/comparison_op.h"

#include <functional>

#include "core/gradient.h"
#include "core/registry.h"
#include "core/schema.h"
#include "operators/elementwise_unary_op.h"

namespace doppio {

namespace {
struct BoolXor {
  bool operator()(bool a, bool b) const { return a != b; }
};
}  // namespace

REGISTER_CPU_OPERATOR(EQ, BinaryElementwiseOp<ComparisonFunctor<std::equal_to<>>>);
REGISTER_CPU_OPERATOR(NE, BinaryElementwiseOp<ComparisonFunctor<std::not_equal_to<>>>);
REGISTER_CPU_OPERATOR(LT, BinaryElementwiseOp<ComparisonFunctor<std::less<>>>);
REGISTER_CPU_OPERATOR(LE, BinaryElementwiseOp<ComparisonFunctor<std::less_equal<>>>);
REGISTER_CPU_OPERATOR(GT, BinaryElementwiseOp<ComparisonFunctor<std::greater<>>>);
REGISTER_CPU_OPERATOR(GE, BinaryElementwiseOp<ComparisonFunctor<std::greater_equal<>>>);
REGISTER_CPU_OPERATOR(And, BinaryElementwiseOp<LogicalFunctor<std::logical_and<>>>);
REGISTER_CPU_OPERATOR(Or, BinaryElementwiseOp<LogicalFunctor<std::logical_or<>>>);
REGISTER_CPU_OPERATOR(Xor, BinaryElementwiseOp<LogicalFunctor<BoolXor>>);
REGISTER_CPU_OPERATOR(Not, UnaryElementwiseOp<NotFunctor>);

namespace {

std::vector<TensorShape> BoolBroadcastShape(const OperatorDef& def,
                                            const std::vector<TensorShape>& in) {
  return BroadcastShapeInference(def, in, /*bool_output=*/true);
}

std::function<void(OpSchema&)> ComparisonSchema(const char* symbol) {
  return [symbol](OpSchema& schema) {
    schema.NumInputs(2)
        .NumOutputs(1)
        .TensorInferenceFunction(BoolBroadcastShape)
        .Apply(BroadcastArgsSchema)
        .Input(0, "A", "first operand (bool, int32, int64, float32 or float64)")
        .Input(1, "B", "second operand, of A's type")
        .Output(0, "C", MakeString("bool tensor A ", symbol, " B in the broadcast shape"))
        .Doc(MakeString("Elementwise comparison A ", symbol,
                        " B with numpy broadcasting, or Caffe2's legacy rule with "
                        "broadcast=1 (C then has A's shape)."));
  };
}

std::function<void(OpSchema&)> LogicalSchema(const char* name) {
  return [name](OpSchema& schema) {
    schema.NumInputs(2)
        .NumOutputs(1)
        .AllowInplace({{0, 0}})
        .TensorInferenceFunction(BoolBroadcastShape)
        .Apply(BroadcastArgsSchema)
        .Input(0, "A", "bool tensor")
        .Input(1, "B", "bool tensor")
        .Output(0, "C", MakeString("A ", name, " B in the broadcast shape"))
        .Doc(MakeString("Elementwise logical ", name,
                        " of two bool tensors with numpy broadcasting, or Caffe2's "
                        "legacy rule with broadcast=1."));
  };
}

constexpr const char kComparisonNoGradient[] =
    "its bool output is piecewise constant in its inputs: no gradient flows back";
constexpr const char kLogicalNoGradient[] = "its inputs and output are booleans";

}  // namespace

OPERATOR_SCHEMA(EQ).Apply(ComparisonSchema("=="));
OPERATOR_SCHEMA(NE).Apply(ComparisonSchema("!="));
OPERATOR_SCHEMA(LT).Apply(ComparisonSchema("<"));
OPERATOR_SCHEMA(LE).Apply(ComparisonSchema("<="));
OPERATOR_SCHEMA(GT).Apply(ComparisonSchema(">"));
OPERATOR_SCHEMA(GE).Apply(ComparisonSchema(">="));
OPERATOR_SCHEMA(And).Apply(LogicalSchema("and"));
OPERATOR_SCHEMA(Or).Apply(LogicalSchema("or"));
OPERATOR_SCHEMA(Xor).Apply(LogicalSchema("xor"));
OPERATOR_SCHEMA(Not)
    .NumInputs(1)
    .NumOutputs(1)
    .AllowInplace({{0, 0}})
    .IdenticalTypeAndShape()
    .Input(0, "X", "bool tensor")
    .Output(0, "Y", "not X")
    .Doc("Elementwise logical negation of a bool tensor.");

NO_GRADIENT(EQ, kComparisonNoGradient);
NO_GRADIENT(NE, kComparisonNoGradient);
NO_GRADIENT(LT, kComparisonNoGradient);
NO_GRADIENT(LE, kComparisonNoGradient);
NO_GRADIENT(GT, kComparisonNoGradient);
NO_GRADIENT(GE, kComparisonNoGradient);
NO_GRADIENT(And, kLogicalNoGradient);
NO_GRADIENT(Or, kLogicalNoGradient);
NO_GRADIENT(Xor, kLogicalNoGradient);
NO_GRADIENT(Not, kLogicalNoGradient);

}  // namespace doppio
