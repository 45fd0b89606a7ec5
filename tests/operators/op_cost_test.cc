// Cost inference of the compute-heavy ops against the textbook formulas,
// written out here from the layer sizes (not from the code under test), and
// the whole-net walk over a small CNN.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/schema.h"
#include "operators/op_cost.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;

TensorShape Shape(std::vector<int64_t> dims,
                  TensorProto::DataType dtype = TensorProto::FLOAT) {
  TensorShape shape;
  for (int64_t d : dims) shape.add_dims(d);
  shape.set_data_type(dtype);
  return shape;
}

OpSchema::Cost Cost(const OperatorDef& def, const std::vector<TensorShape>& in) {
  const OpSchema* schema = OpSchemaRegistry::Schema(def.type());
  EXPECT_NE(schema, nullptr) << def.type();
  EXPECT_TRUE(schema->HasCostInferenceFunction()) << def.type();
  return schema->InferCost(def, in);
}

TEST(OpCost, Conv3x3Pad1) {
  // N=8, C=3, 32x32 -> M=16, 3x3, pad 1, stride 1: output 32x32.
  const OperatorDef def = MakeOp("Conv", {"X", "W", "b"}, {"Y"},
                                 {IntArg("kernel", 3), IntArg("pad", 1)});
  const OpSchema::Cost cost =
      Cost(def, {Shape({8, 3, 32, 32}), Shape({16, 3, 3, 3}), Shape({16})});
  const uint64_t outputs = 8ull * 16 * 32 * 32;
  EXPECT_EQ(cost.flops, outputs * (2 * 3 * 3 * 3) + outputs);
  EXPECT_EQ(cost.bytes_read, 4ull * (8 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16));
  EXPECT_EQ(cost.bytes_written, 4 * outputs);
  EXPECT_EQ(cost.params_bytes, 4ull * (16 * 27 + 16));
}

TEST(OpCost, ConvStrideGroupsAndDouble) {
  // 2 groups, stride 2, no pad, 5x5 kernel on 17x17: output (17-5)/2+1 = 7.
  const OperatorDef def = MakeOp("Conv", {"X", "W"}, {"Y"},
                                 {IntArg("kernel", 5), IntArg("stride", 2), IntArg("group", 2)});
  const OpSchema::Cost cost = Cost(
      def, {Shape({2, 4, 17, 17}, TensorProto::DOUBLE), Shape({6, 2, 5, 5}, TensorProto::DOUBLE)});
  EXPECT_EQ(cost.flops, 2ull * 2 * 7 * 7 * 6 * (5 * 5 * 2));
  EXPECT_EQ(cost.bytes_written, 8ull * 2 * 6 * 7 * 7);
}

TEST(OpCost, ConvNHWC) {
  const OperatorDef def = MakeOp("Conv", {"X", "W"}, {"Y"},
                                 {IntArg("kernel", 3), StringArg("order", "NHWC")});
  // X [1, 10, 10, 4], W [5, 3, 3, 4]: output 8x8x5.
  const OpSchema::Cost cost = Cost(def, {Shape({1, 10, 10, 4}), Shape({5, 3, 3, 4})});
  EXPECT_EQ(cost.flops, 2ull * 8 * 8 * 5 * 3 * 3 * 4);
}

TEST(OpCost, ConvGradientIsDwPlusDbPlusDx) {
  const uint64_t forward = 2ull * 4 * 8 * 8 * 6 * 3 * 3 * 2;  // N=4, 8x8 out, M=6, C=2
  const std::vector<TensorShape> in = {Shape({4, 2, 8, 8}), Shape({6, 2, 3, 3}),
                                       Shape({4, 6, 8, 8})};
  const auto args = std::vector<Argument>{IntArg("kernel", 3), IntArg("pad", 1)};
  EXPECT_EQ(Cost(MakeOp("ConvGradient", {"X", "W", "dY"}, {"dW", "db", "dX"}, args), in).flops,
            2 * forward + 4ull * 6 * 8 * 8);
  EXPECT_EQ(Cost(MakeOp("ConvGradient", {"X", "W", "dY"}, {"dW", "db"}, args), in).flops,
            forward + 4ull * 6 * 8 * 8);
}

TEST(OpCost, FCAndItsGradient) {
  // X [64, 3136] (or [64, 64, 7, 7] flattened at axis 1), W [128, 3136].
  const OpSchema::Cost cost = Cost(MakeOp("FC", {"X", "W", "b"}, {"Y"}),
                                   {Shape({64, 64, 7, 7}), Shape({128, 3136}), Shape({128})});
  EXPECT_EQ(cost.flops, 2ull * 64 * 128 * 3136 + 64 * 128);
  EXPECT_EQ(cost.bytes_written, 4ull * 64 * 128);
  EXPECT_EQ(cost.params_bytes, 4ull * (128 * 3136 + 128));
  const OpSchema::Cost grad =
      Cost(MakeOp("FCGradient", {"X", "W", "dY"}, {"dW", "db", "dX"}),
           {Shape({64, 3136}), Shape({128, 3136}), Shape({64, 128})});
  EXPECT_EQ(grad.flops, 2 * (2ull * 64 * 128 * 3136) + 64 * 128);
  const OpSchema::Cost transposed = Cost(MakeOp("FCTransposed", {"X", "W", "b"}, {"Y"}),
                                         {Shape({5, 7}), Shape({7, 3}), Shape({3})});
  EXPECT_EQ(transposed.flops, 2ull * 5 * 3 * 7 + 5 * 3);
}

TEST(OpCost, Pooling) {
  // 2x2 stride 2 max pool over [64, 32, 28, 28]: one compare per window tap.
  const OpSchema::Cost max_pool =
      Cost(MakeOp("MaxPool", {"X"}, {"Y"}, {IntArg("kernel", 2), IntArg("stride", 2)}),
           {Shape({64, 32, 28, 28})});
  EXPECT_EQ(max_pool.flops, 64ull * 32 * 14 * 14 * 4);
  EXPECT_EQ(max_pool.bytes_read, 4ull * 64 * 32 * 28 * 28);
  EXPECT_EQ(max_pool.bytes_written, 4ull * 64 * 32 * 14 * 14);
  // 3x3 stride 1 pad 1 average pool keeps the size.
  const OpSchema::Cost average = Cost(
      MakeOp("AveragePool", {"X"}, {"Y"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
      {Shape({2, 3, 5, 5})});
  EXPECT_EQ(average.flops, 2ull * 3 * 5 * 5 * 9);
  // Global pooling: the whole image is the window.
  const OpSchema::Cost global = Cost(
      MakeOp("AveragePool", {"X"}, {"Y"}, {IntArg("global_pooling", 1)}), {Shape({2, 3, 6, 4})});
  EXPECT_EQ(global.flops, 2ull * 3 * 24);
}

TEST(OpCost, MatMulAndPointwise) {
  EXPECT_EQ(Cost(MakeOp("MatMul", {"A", "B"}, {"C"}), {Shape({4, 5}), Shape({5, 6})}).flops,
            2ull * 4 * 5 * 6);
  EXPECT_EQ(Cost(MakeOp("MatMul", {"A", "B"}, {"C"}, {IntArg("trans_b", 1)}),
                 {Shape({4, 5}), Shape({6, 5})}).flops,
            2ull * 4 * 5 * 6);
  EXPECT_EQ(Cost(MakeOp("Relu", {"X"}, {"Y"}), {Shape({3, 7})}).flops, 21u);
  EXPECT_EQ(Cost(MakeOp("Sigmoid", {"X"}, {"Y"}), {Shape({3, 7})}).flops, 4u * 21);
  EXPECT_EQ(Cost(MakeOp("Scale", {"X"}, {"Y"}), {Shape({2, 5})}).bytes_written, 4u * 10);
  // Broadcast add: one add per output element.
  EXPECT_EQ(Cost(MakeOp("Add", {"A", "B"}, {"C"}, {IntArg("broadcast", 1)}),
                 {Shape({4, 6}), Shape({6})}).flops,
            24u);
  EXPECT_EQ(Cost(MakeOp("Sum", {"a", "b", "c"}, {"s"}),
                 {Shape({10}), Shape({10}), Shape({10})}).flops,
            20u);
  const OpSchema::Cost concat = Cost(MakeOp("Concat", {"a", "b"}, {"c", "split"}),
                                     {Shape({2, 3}), Shape({2, 5})});
  EXPECT_EQ(concat.flops, 0u);
  EXPECT_EQ(concat.bytes_read, 4ull * 16);
}

TEST(OpCost, BadShapesAreErrorsNamingTheOp) {
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       Cost(MakeOp("Conv", {"X", "W"}, {"Y"}, {IntArg("kernel", 3)}),
                            {Shape({1, 3, 8, 8})});
                     }),
                     "Conv");
  EXPECT_MESSAGE_HAS(ErrorOf([] {
                       Cost(MakeOp("FC", {"X", "W", "b"}, {"Y"}),
                            {Shape({4, 10}), Shape({3, 9}), Shape({3})});
                     }),
                     "FC");
}

// The reference CNN of docs/DESIGN.md section 8 (forward only), per image:
// conv1 2*28*28*32*9*1, conv2 2*14*14*64*9*32, fc1 2*3136*128, fc2 2*128*10
// (multiply-adds), plus the biases.
TEST(OpCost, NetWalkOverReferenceCnnForward) {
  const int64_t batch = 4;
  NetDef net;
  auto add = [&](const OperatorDef& op) { *net.add_op() = op; };
  add(MakeOp("Conv", {"data", "conv1_w", "conv1_b"}, {"conv1"},
             {IntArg("kernel", 3), IntArg("pad", 1)}));
  add(MakeOp("Relu", {"conv1"}, {"conv1"}));
  add(MakeOp("MaxPool", {"conv1"}, {"pool1"}, {IntArg("kernel", 2), IntArg("stride", 2)}));
  add(MakeOp("Conv", {"pool1", "conv2_w", "conv2_b"}, {"conv2"},
             {IntArg("kernel", 3), IntArg("pad", 1)}));
  add(MakeOp("Relu", {"conv2"}, {"conv2"}));
  add(MakeOp("MaxPool", {"conv2"}, {"pool2"}, {IntArg("kernel", 2), IntArg("stride", 2)}));
  add(MakeOp("FC", {"pool2", "fc1_w", "fc1_b"}, {"fc1"}));
  add(MakeOp("FC", {"fc1", "fc2_w", "fc2_b"}, {"fc2"}));
  add(MakeOp("UnknownCostlessThing", {"fc2"}, {"out"}));
  std::map<std::string, TensorShape> shapes = {
      {"data", Shape({batch, 1, 28, 28})},  {"conv1_w", Shape({32, 1, 3, 3})},
      {"conv1_b", Shape({32})},            {"conv2_w", Shape({64, 32, 3, 3})},
      {"conv2_b", Shape({64})},            {"fc1_w", Shape({128, 3136})},
      {"fc1_b", Shape({128})},             {"fc2_w", Shape({10, 128})},
      {"fc2_b", Shape({10})}};
  const NetCostEstimate estimate = InferNetCost(net, shapes);
  ASSERT_EQ(estimate.ops.size(), 9u);
  const uint64_t conv1 = 2ull * 28 * 28 * 32 * 9 * 1 + 28 * 28 * 32;
  const uint64_t conv2 = 2ull * 14 * 14 * 64 * 9 * 32 + 14 * 14 * 64;
  const uint64_t fc1 = 2ull * 3136 * 128 + 128;
  const uint64_t fc2 = 2ull * 128 * 10 + 10;
  const uint64_t relu = 28 * 28 * 32 + 14 * 14 * 64;
  const uint64_t pool = 14 * 14 * 32 * 4 + 7 * 7 * 64 * 4;
  EXPECT_EQ(estimate.ops[0].cost.flops, batch * conv1);
  EXPECT_EQ(estimate.ops[3].cost.flops, batch * conv2);
  EXPECT_EQ(estimate.ops[6].cost.flops, batch * fc1);
  EXPECT_EQ(estimate.ops[7].cost.flops, batch * fc2);
  EXPECT_EQ(estimate.total.flops, batch * (conv1 + conv2 + fc1 + fc2 + relu + pool));
  EXPECT_FALSE(estimate.ops[8].known);
  EXPECT_EQ(estimate.unknown_ops, 1);
  EXPECT_EQ(estimate.ops[8].reason, "no schema");
  ASSERT_EQ(estimate.shapes.count("fc2"), 1u);
  EXPECT_EQ(estimate.shapes.at("fc2").dims_size(), 2);
  EXPECT_EQ(estimate.shapes.at("fc2").dims(1), 10);
  // Without the data shape nothing downstream has a figure, and no error.
  shapes.erase("data");
  const NetCostEstimate blind = InferNetCost(net, shapes);
  EXPECT_EQ(blind.total.flops, 0u);
  EXPECT_EQ(blind.unknown_ops, 9);
  EXPECT_NE(blind.ops[0].reason.find("'data'"), std::string::npos) << blind.ops[0].reason;
}

}  // namespace
}  // namespace doppio
