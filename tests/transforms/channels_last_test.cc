// ChannelsLast: the NHWC rewrite of an NCHW net's convolutional region
// computes what the net computed (checked against the untouched net), with
// order switches only at the region's borders, and leaves out what it must.

#include "transforms/channels_last.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::ChannelsLast;
using transforms::PlanChannelsLast;

OperatorDef Conv(const std::string& x, const std::string& w, const std::string& b,
                 const std::string& y, int kernel, int group = 1) {
  return MakeOp("Conv", {x, w, b}, {y},
                {IntArg("kernel", kernel), IntArg("pad", kernel / 2), IntArg("group", group)});
}

// x -> conv1 -> relu -> maxpool -> conv2 (groups) -> BN -> Add(pool) ->
// Concat(conv3(pool)) -> Sigmoid -> global pool -> FC, with the pooled value
// also handed out.
NetDef BlockNet() {
  return MakeNet("block",
                 {Conv("x", "w1", "b1", "c1", 3), MakeOp("Relu", {"c1"}, {"c1"}),
                  MakeOp("MaxPool", {"c1"}, {"p"},
                         {IntArg("kernel", 3), IntArg("stride", 2), IntArg("pad", 1)}),
                  Conv("p", "w2", "b2", "c2", 3, 2),
                  MakeOp("SpatialBN", {"c2", "s", "o", "m", "v"}, {"bn"}, {IntArg("is_test", 1)}),
                  MakeOp("Add", {"bn", "p"}, {"sum"}), Conv("p", "w3", "b3", "c3", 1),
                  MakeOp("Concat", {"sum", "c3"}, {"cat", "cat_info"}, {IntArg("axis", 1)}),
                  MakeOp("Sigmoid", {"cat"}, {"cat"}),
                  MakeOp("AveragePool", {"cat"}, {"g"}, {IntArg("global_pooling", 1)}),
                  MakeOp("FC", {"g", "fw", "fb"}, {"y"})},
                 {"y", "p"});
}

void FeedBlock(Workspace* ws, std::mt19937* rng) {
  FeedUniform(ws, "x", {2, 4, 9, 9}, -1, 1, rng);
  FeedUniform(ws, "w1", {8, 4, 3, 3}, -0.5, 0.5, rng);
  FeedUniform(ws, "b1", {8}, -0.5, 0.5, rng);
  FeedUniform(ws, "w2", {8, 4, 3, 3}, -0.5, 0.5, rng);
  FeedUniform(ws, "b2", {8}, -0.5, 0.5, rng);
  FeedUniform(ws, "w3", {6, 8, 1, 1}, -0.5, 0.5, rng);
  FeedUniform(ws, "b3", {6}, -0.5, 0.5, rng);
  for (const char* name : {"s", "o", "m"}) FeedUniform(ws, name, {8}, -0.5, 0.5, rng);
  FeedUniform(ws, "v", {8}, 0.5, 1.5, rng);
  FeedUniform(ws, "fw", {5, 14}, -0.5, 0.5, rng);
  FeedUniform(ws, "fb", {5}, -0.5, 0.5, rng);
}

int Count(const NetDef& net, const std::string& type) {
  return static_cast<int>(std::count_if(net.op().begin(), net.op().end(),
                                        [&](const OperatorDef& op) { return op.type() == type; }));
}

TEST(ChannelsLastTest, RegionComputesWhatTheNetComputed) {
  std::mt19937 rng(7);
  Workspace ws;
  FeedBlock(&ws, &rng);
  const NetDef net = BlockNet();
  Workspace reference;
  CopyTensors(ws, &reference);
  reference.RunNetOnce(net);
  const transforms::ChannelsLastPlan plan = PlanChannelsLast(net, ws);
  // Everything but the FC: 3 convs, Relu, MaxPool, BN, Add, Concat,
  // Sigmoid, AveragePool.
  EXPECT_EQ(plan.region.size(), 10u) << plan.ToString(net);
  EXPECT_FALSE(plan.region.count(10));
  int switched = 0;
  const NetDef out = ChannelsLast(net, &ws, &switched);
  EXPECT_EQ(switched, 10);
  EXPECT_EQ(Count(out, "NCHW2NHWC"), 1);  // x
  EXPECT_EQ(Count(out, "NHWC2NCHW"), 2);  // the pooled features (FC), p (handed out)
  ws.RunNetOnce(out);
  for (const char* name : {"y", "p"}) {
    EXPECT_EQ(ws.GetBlob(name)->GetTensor().dims(), reference.GetBlob(name)->GetTensor().dims());
    EXPECT_LT(MaxRelativeDiff(Values(ws, name), Values(reference, name)), 1e-5) << name;
  }
}

TEST(ChannelsLastTest, LeavesOutWhatCannotSwitch) {
  std::mt19937 rng(8);
  Workspace ws;
  FeedBlock(&ws, &rng);
  FeedUniform(&ws, "k", {1, 8, 1, 1}, -1, 1, &rng);
  // Add with an outside constant: the Add (and what follows) stays NCHW.
  NetDef net = MakeNet("n",
                       {Conv("x", "w1", "b1", "c1", 3), MakeOp("Add", {"c1", "k"}, {"a"}),
                        MakeOp("Relu", {"a"}, {"y"})},
                       {"y"});
  EXPECT_EQ(PlanChannelsLast(net, ws).ToString(net), "1 op(s) in NHWC: #0 Conv");
  // A filter the net computes is no constant: nothing switches.
  net = MakeNet("n", {MakeOp("Copy", {"w1"}, {"wc"}), Conv("x", "wc", "b1", "c1", 3)}, {"c1"});
  EXPECT_TRUE(PlanChannelsLast(net, ws).region.empty());
  // A blob written inside and outside the region takes its writers out.
  net = MakeNet("n",
                {Conv("x", "w1", "b1", "c1", 3), MakeOp("Relu", {"c1"}, {"r"}),
                 MakeOp("Transpose", {"c1"}, {"r"}, {IntsArg("axes", {0, 1, 2, 3})}),
                 Conv("r", "w3", "b3", "y", 1)},
                {"y"});
  const transforms::ChannelsLastPlan plan = PlanChannelsLast(net, ws);
  EXPECT_FALSE(plan.region.count(1)) << plan.ToString(net);
  Workspace reference;
  CopyTensors(ws, &reference);
  reference.RunNetOnce(net);
  ws.RunNetOnce(ChannelsLast(net, &ws));
  EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(reference, "y")), 1e-5);
}

}  // namespace
}  // namespace testing
}  // namespace doppio
