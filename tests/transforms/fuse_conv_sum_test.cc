// FuseConvSum: a residual Conv -> Add (-> Relu) becomes one ConvFusion of
// fusion_type 2 or 3 that computes what the ops computed (checked against
// the unfused net); pairs that are not safe to fuse stay as they are.

#include "transforms/fuse_conv_sum.h"

#include <gtest/gtest.h>

#include <random>

#include "core/argument.h"
#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::FuseConvSum;

int64_t IntArgOf(const OperatorDef& op, const std::string& name) {
  return ArgumentHelper(op).GetSingle<int64_t>(name, -1);
}

OperatorDef Conv3x3(const std::string& x, const std::string& w, const std::string& y) {
  return MakeOp("Conv", {x, w}, {y}, {IntArg("kernel", 3), IntArg("pad", 1)});
}

void FeedBlock(Workspace* ws, std::mt19937* rng) {
  FeedUniform(ws, "x", {2, 4, 6, 5}, -1, 1, rng);
  FeedUniform(ws, "w1", {4, 4, 3, 3}, -0.4, 0.4, rng);
  FeedUniform(ws, "w2", {4, 4, 3, 3}, -0.4, 0.4, rng);
  FeedUniform(ws, "w3", {4, 4, 1, 1}, -0.4, 0.4, rng);
}

// Fuses `net` over the fed workspace and checks `outputs` against the
// unfused net; returns the fused net.
NetDef FuseAndCompare(const NetDef& net, Workspace* ws, int expected_fusions,
                      const std::vector<std::string>& outputs) {
  Workspace reference;
  CopyTensors(*ws, &reference);
  reference.RunNetOnce(net);
  int fused = 0;
  const NetDef out = FuseConvSum(net, *ws, &fused);
  EXPECT_EQ(fused, expected_fusions) << out.DebugString();
  ws->RunNetOnce(out);
  for (const std::string& name : outputs) {
    EXPECT_LT(MaxRelativeDiff(Values(*ws, name), Values(reference, name)), 1e-5) << name;
  }
  return out;
}

TEST(FuseConvSumTest, ResidualBlockWithReluBecomesType3) {
  std::mt19937 rng(1);
  Workspace ws;
  FeedBlock(&ws, &rng);
  const NetDef net =
      MakeNet("block",
              {Conv3x3("x", "w1", "c1"), MakeOp("Relu", {"c1"}, {"c1"}), Conv3x3("c1", "w2", "c2"),
               MakeOp("Add", {"c2", "x"}, {"s"}), MakeOp("Relu", {"s"}, {"y"})},
              {"y"});
  const NetDef out = FuseAndCompare(net, &ws, 1, {"y"});
  ASSERT_EQ(out.op_size(), 3);
  const OperatorDef& fused = out.op(2);
  EXPECT_EQ(fused.type(), "ConvFusion");
  EXPECT_EQ(IntArgOf(fused, "fusion_type"), 3);
  EXPECT_EQ(std::vector<std::string>(fused.input().begin(), fused.input().end()),
            (std::vector<std::string>{"c1", "w2", "x"}));
  EXPECT_EQ(fused.output(0), "y");
}

// The summand first, the sum in place over it (Caffe2's Sum(S, Y) -> S),
// no Relu after: type 2, at the Add's position, after the shortcut's Conv.
TEST(FuseConvSumTest, SumIntoTheShortcutBecomesType2) {
  std::mt19937 rng(2);
  Workspace ws;
  FeedBlock(&ws, &rng);
  const NetDef net = MakeNet(
      "projection",
      {Conv3x3("x", "w1", "main"), MakeOp("Conv", {"x", "w3"}, {"short"}, {IntArg("kernel", 1)}),
       MakeOp("Sum", {"short", "main"}, {"short"})},
      {"short"});
  const NetDef out = FuseAndCompare(net, &ws, 1, {"short"});
  ASSERT_EQ(out.op_size(), 2);
  // Both operands are Conv outputs: the later Conv (the shortcut) is fused.
  EXPECT_EQ(out.op(0).type(), "Conv");
  EXPECT_EQ(out.op(1).type(), "ConvFusion");
  EXPECT_EQ(IntArgOf(out.op(1), "fusion_type"), 2);
  EXPECT_EQ(out.op(1).input(1), "w3");
  EXPECT_EQ(out.op(1).input(2), "main");
}

TEST(FuseConvSumTest, UnsafePairsStay) {
  std::mt19937 rng(3);
  Workspace ws;
  FeedBlock(&ws, &rng);
  FeedUniform(&ws, "row", {1, 4, 1, 1}, -1, 1, &rng);
  const std::vector<NetDef> nets = {
      // The Conv's output is also read elsewhere.
      MakeNet("shared",
              {Conv3x3("x", "w1", "c"), MakeOp("Add", {"c", "x"}, {"s"}),
               MakeOp("Copy", {"c"}, {"c_copy"})},
              {"s", "c_copy"}),
      // Broadcasting Add: the operands' shapes differ.
      MakeNet("broadcast", {Conv3x3("x", "w1", "c"), MakeOp("Add", {"c", "row"}, {"s"})}, {"s"}),
      // The Conv's input changes between the Conv and the Add.
      MakeNet(
          "moved",
          {Conv3x3("x", "w1", "c"), MakeOp("Relu", {"x"}, {"x"}), MakeOp("Add", {"c", "x"}, {"s"})},
          {"s"}),
      // The Conv's output is handed out.
      MakeNet("handed_out", {Conv3x3("x", "w1", "c"), MakeOp("Add", {"c", "x"}, {"s"})},
              {"s", "c"}),
  };
  for (const NetDef& net : nets) {
    Workspace fresh;
    CopyTensors(ws, &fresh);
    std::vector<std::string> outputs(net.external_output().begin(), net.external_output().end());
    const NetDef out = FuseAndCompare(net, &fresh, 0, outputs);
    EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString()) << net.name();
  }
}

}  // namespace
}  // namespace testing
}  // namespace doppio
