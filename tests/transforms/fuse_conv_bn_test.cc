// FuseConvBN: the folded net computes what Conv + SpatialBN(is_test)
// computes, the folded weights follow the formula written out here, and
// patterns that must not be folded are left alone.

#include "transforms/fuse_conv_bn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::FuseConvBN;

struct ConvCase {
  int64_t batch, channels, out_channels, size, kernel, group;
  std::string order;
  bool bias;
  bool inplace_bn;
};

// A Conv + SpatialBN net for `c` with random inputs in `ws`; returns it.
NetDef ConvBnNet(const ConvCase& c, Workspace* ws, std::mt19937* rng) {
  const bool nchw = c.order == "NCHW";
  const int64_t cg = c.channels / c.group;
  FeedUniform(ws, "x",
              nchw ? std::vector<int64_t>{c.batch, c.channels, c.size, c.size}
                   : std::vector<int64_t>{c.batch, c.size, c.size, c.channels},
              -1, 1, rng);
  FeedUniform(ws, "w",
              nchw ? std::vector<int64_t>{c.out_channels, cg, c.kernel, c.kernel}
                   : std::vector<int64_t>{c.out_channels, c.kernel, c.kernel, cg},
              -0.5, 0.5, rng);
  std::vector<std::string> inputs{"x", "w"};
  if (c.bias) {
    FeedUniform(ws, "b", {c.out_channels}, -0.5, 0.5, rng);
    inputs.push_back("b");
  }
  FeedBatchNormParams(ws, "bn", c.out_channels, rng);
  const OperatorDef conv =
      MakeOp("Conv", inputs, {"c"},
             {IntArg("kernel", c.kernel), IntArg("pad", c.kernel / 2), IntArg("group", c.group),
              StringArg("order", c.order)});
  const std::string bn_out = c.inplace_bn ? "c" : "y";
  return MakeNet("conv_bn", {conv, BatchNorm("bn", "c", bn_out, 1, c.order)}, {bn_out});
}

// Runs `net` and its folded form on copies of `ws`; returns the max
// relative difference of the BN output and checks the net's shape.
double FoldedVersusUnfused(const NetDef& net, const Workspace& ws, const std::string& output) {
  Workspace unfused_ws, fused_ws;
  CopyTensors(ws, &unfused_ws);
  CopyTensors(ws, &fused_ws);
  unfused_ws.RunNetOnce(net);
  int fused = 0;
  const NetDef folded = FuseConvBN(net, &fused_ws, &fused);
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(folded.op_size(), 1);
  EXPECT_EQ(CountOps(folded, "SpatialBN"), 0);
  fused_ws.RunNetOnce(folded);
  EXPECT_EQ(Dims(fused_ws, output), Dims(unfused_ws, output));
  return MaxRelativeDiff(Values(fused_ws, output), Values(unfused_ws, output));
}

TEST(FuseConvBNTest, FoldedNetMatchesConvThenBatchNorm) {
  std::mt19937 rng(7);
  const std::vector<ConvCase> cases = {
      {2, 3, 8, 9, 3, 1, "NCHW", true, false},
      {1, 4, 6, 7, 3, 1, "NCHW", false, false},   // no conv bias: one is made
      {3, 4, 6, 5, 3, 1, "NHWC", true, false},
      {2, 4, 8, 6, 3, 2, "NCHW", true, false},    // groups fold per channel too
      {2, 6, 9, 5, 1, 3, "NHWC", false, false},
      {2, 3, 5, 6, 3, 1, "NCHW", true, true},     // SpatialBN in place on c
  };
  for (const ConvCase& c : cases) {
    Workspace ws;
    const NetDef net = ConvBnNet(c, &ws, &rng);
    const std::string output = c.inplace_bn ? "c" : "y";
    EXPECT_LT(FoldedVersusUnfused(net, ws, output), 2e-5)
        << c.order << " group " << c.group << " bias " << c.bias;
  }
}

TEST(FuseConvBNTest, RandomShapesMatchUnfused) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> pick(1, 4);
  for (int trial = 0; trial < 12; ++trial) {
    ConvCase c;
    c.batch = pick(rng);
    c.group = trial % 3 == 0 ? 2 : 1;
    c.channels = pick(rng) * c.group;
    c.out_channels = pick(rng) * 2 * c.group;
    c.size = 3 + pick(rng);
    c.kernel = trial % 2 == 0 ? 3 : 1;
    c.order = trial % 4 < 2 ? "NCHW" : "NHWC";
    c.bias = trial % 5 != 0;
    c.inplace_bn = trial % 6 == 0;
    Workspace ws;
    const NetDef net = ConvBnNet(c, &ws, &rng);
    EXPECT_LT(FoldedVersusUnfused(net, ws, c.inplace_bn ? "c" : "y"), 2e-5) << "trial " << trial;
  }
}

// The folded weights against the formula, computed here in double.
TEST(FuseConvBNTest, FoldedWeightsFollowTheFormula) {
  std::mt19937 rng(3);
  Workspace ws;
  const NetDef net = ConvBnNet({1, 2, 3, 4, 3, 1, "NCHW", true, false}, &ws, &rng);
  const std::vector<float> w = Values(ws, "w"), b = Values(ws, "b");
  const std::vector<float> s = Values(ws, "bn_s"), shift = Values(ws, "bn_b"),
                           mean = Values(ws, "bn_rm"), var = Values(ws, "bn_riv");
  const NetDef folded = FuseConvBN(net, &ws);
  ASSERT_EQ(folded.op_size(), 1);
  const OperatorDef& conv = folded.op(0);
  ASSERT_EQ(conv.input_size(), 3);
  EXPECT_EQ(conv.output(0), "y");
  EXPECT_NE(conv.input(1), "w");  // a new blob: the original filter is kept
  EXPECT_EQ(Values(ws, "w"), w);
  const std::vector<float> fw = Values(ws, conv.input(1)), fb = Values(ws, conv.input(2));
  const int per_channel = 2 * 3 * 3;
  for (int m = 0; m < 3; ++m) {
    const double k = s[m] / std::sqrt(double(var[m]) + 1e-5);
    for (int i = 0; i < per_channel; ++i) {
      EXPECT_NEAR(fw[m * per_channel + i], w[m * per_channel + i] * k, 1e-6);
    }
    EXPECT_NEAR(fb[m], (b[m] - mean[m]) * k + shift[m], 1e-6);
  }
}

// Each net keeps its SpatialBN; the pass leaves it exactly as it was.
void ExpectUnchanged(const NetDef& net, Workspace* ws) {
  int fused = -1;
  const NetDef out = FuseConvBN(net, ws, &fused);
  EXPECT_EQ(fused, 0);
  EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString());
}

TEST(FuseConvBNTest, LeavesUnsafePatternsAlone) {
  std::mt19937 rng(11);
  const ConvCase c{1, 2, 4, 5, 3, 1, "NCHW", true, false};
  {  // the Conv output has a second reader
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    *net.add_op() = MakeOp("Relu", {"c"}, {"r"});
    ExpectUnchanged(net, &ws);
  }
  {  // training-mode SpatialBN
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    net.mutable_op(1)->mutable_arg(0)->set_i(0);
    ASSERT_EQ(net.op(1).arg(0).name(), "is_test");
    ExpectUnchanged(net, &ws);
  }
  {  // NCHW Conv feeding an NHWC SpatialBN
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    *net.mutable_op(1) = BatchNorm("bn", "c", "y", 1, "NHWC");
    ExpectUnchanged(net, &ws);
  }
  {  // the Conv output is an external output
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    net.add_external_output("c");
    ExpectUnchanged(net, &ws);
  }
  {  // the filter is computed by the net, so its value is not known yet
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    NetDef with_producer = MakeNet("p", {MakeOp("Copy", {"w"}, {"w2"})}, {"y"});
    OperatorDef conv = net.op(0);
    conv.set_input(1, "w2");
    *with_producer.add_op() = conv;
    *with_producer.add_op() = net.op(1);
    ExpectUnchanged(with_producer, &ws);
  }
  {  // the BN output is read between the two ops
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    FeedUniform(&ws, "y", {1}, 0, 1, &rng);
    NetDef reordered = MakeNet("r", {net.op(0), MakeOp("Copy", {"y"}, {"old_y"}), net.op(1)},
                               {"y", "old_y"});
    ExpectUnchanged(reordered, &ws);
  }
  {  // a BN parameter is missing from the workspace
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    ws.RemoveBlob("bn_rm");
    ExpectUnchanged(net, &ws);
  }
  {  // BN statistics of the wrong length
    Workspace ws;
    NetDef net = ConvBnNet(c, &ws, &rng);
    FeedUniform(&ws, "bn_riv", {3}, 0.5, 1, &rng);
    ExpectUnchanged(net, &ws);
  }
}

// Two pairs, and a filter shared by both Convs: each gets its own folded
// copy, so neither sees the other's BN.
TEST(FuseConvBNTest, SharedFilterFoldsIntoSeparateBlobs) {
  std::mt19937 rng(5);
  Workspace ws;
  FeedUniform(&ws, "x", {2, 3, 6, 6}, -1, 1, &rng);
  FeedUniform(&ws, "w", {3, 3, 3, 3}, -0.5, 0.5, &rng);
  FeedUniform(&ws, "b", {3}, -0.5, 0.5, &rng);
  FeedBatchNormParams(&ws, "bn1", 3, &rng);
  FeedBatchNormParams(&ws, "bn2", 3, &rng);
  const std::vector<Argument> args{IntArg("kernel", 3), IntArg("pad", 1)};
  const NetDef net = MakeNet(
      "two", {MakeOp("Conv", {"x", "w", "b"}, {"c1"}, args), BatchNorm("bn1", "c1", "y1"),
              MakeOp("Conv", {"y1", "w", "b"}, {"c2"}, args), BatchNorm("bn2", "c2", "y2")},
      {"y2"});
  Workspace unfused_ws;
  CopyTensors(ws, &unfused_ws);
  unfused_ws.RunNetOnce(net);
  int fused = 0;
  const NetDef folded = FuseConvBN(net, &ws, &fused);
  EXPECT_EQ(fused, 2);
  ASSERT_EQ(folded.op_size(), 2);
  EXPECT_NE(folded.op(0).input(1), folded.op(1).input(1));
  ws.RunNetOnce(folded);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "y2"), Values(unfused_ws, "y2")), 2e-5);
}

}  // namespace
}  // namespace testing
}  // namespace doppio
