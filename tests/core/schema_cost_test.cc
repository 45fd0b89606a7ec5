// OpSchema's cost inference hook (Caffe2's CostInferenceFunction/InferCost):
// a schema without one says so, and one attached is called with the def and
// the input shapes it was given.
#include <gtest/gtest.h>

#include "core/schema.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::MakeOp;

TensorShape Shape(std::vector<int64_t> dims) {
  TensorShape shape;
  for (int64_t d : dims) shape.add_dims(d);
  return shape;
}

TEST(SchemaCost, MissingCostFunctionIsAnErrorNamingTheOp) {
  OpSchema schema("NoCostOp", __FILE__, __LINE__);
  schema.NumInputs(1).NumOutputs(1);
  EXPECT_FALSE(schema.HasCostInferenceFunction());
  EXPECT_MESSAGE_HAS(ErrorOf([&] { schema.InferCost(MakeOp("NoCostOp", {"x"}, {"y"}), {}); }),
                     "NoCostOp", "no cost inference");
}

TEST(SchemaCost, AttachedFunctionSeesDefAndShapes) {
  OpSchema schema("ToyCostOp", __FILE__, __LINE__);
  schema.NumInputs(2).NumOutputs(1).CostInferenceFunction(
      [](const OperatorDef& def, const std::vector<TensorShape>& in) {
        OpSchema::Cost cost;
        cost.flops = in.at(0).dims(0) * in.at(1).dims(0);
        cost.bytes_read = def.input_size();
        cost.bytes_written = 7;
        cost.params_bytes = 3;
        return cost;
      });
  ASSERT_TRUE(schema.HasCostInferenceFunction());
  const OpSchema::Cost cost =
      schema.InferCost(MakeOp("ToyCostOp", {"a", "b"}, {"c"}), {Shape({6}), Shape({7})});
  EXPECT_EQ(cost.flops, 42u);
  EXPECT_EQ(cost.bytes_read, 2u);
  EXPECT_EQ(cost.bytes_written, 7u);
  EXPECT_EQ(cost.params_bytes, 3u);
}

TEST(SchemaCost, DefaultCostIsZero) {
  const OpSchema::Cost cost;
  EXPECT_EQ(cost.flops + cost.bytes_read + cost.bytes_written + cost.params_bytes, 0u);
}

}  // namespace
}  // namespace doppio
