// ChannelsLast: the NHWC rewrite of an NCHW net's convolutional region
// computes what the net computed (checked against the untouched net), with
// order switches only at the region's borders, and leaves out what it must.

#include "transforms/channels_last.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "core/layout_advice.h"
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

// The costed plan with a stand-in for the kernels' advice, so the test
// decides the same on every machine.
transforms::ChannelsLastOptions Costed(std::function<ActivationLayout(const OperatorDef&)> pick) {
  transforms::ChannelsLastOptions options;
  options.always = false;
  options.advise = [pick](const OperatorDef& op, const std::vector<TensorShape>& shapes) {
    EXPECT_GE(shapes.size(), 2u) << "the advice needs X's and the filter's shapes";
    return pick(op);
  };
  return options;
}

ActivationLayout Always(ActivationLayout layout, const OperatorDef&) { return layout; }

// BlockNet's elements: x 2x4x9x9 = 648, c1 2x8x9x9 = 1296, p 2x8x5x5 = 400,
// c2 400, c3 2x6x5x5 = 300, g 2x14x1x1 = 28. One part; a convolution
// counts its input and output, a border the value switched.
TEST(ChannelsLastTest, CostedPartsWeighConvolutionsAgainstBorders) {
  std::mt19937 rng(9);
  Workspace ws;
  FeedBlock(&ws, &rng);
  const NetDef net = BlockNet();
  const int64_t borders = 648 /* x in */ + 400 /* p out */ + 28 /* g to the FC */;
  const int64_t convs = (648 + 1296) + (400 + 400) + (400 + 300);
  using namespace std::placeholders;
  transforms::ChannelsLastPlan plan =
      PlanChannelsLast(net, ws, Costed(std::bind(Always, ActivationLayout::kNhwc, _1)));
  ASSERT_EQ(plan.parts.size(), 1u) << plan.ToString(net);
  EXPECT_EQ(plan.parts[0].saved, convs);
  EXPECT_EQ(plan.parts[0].cost, borders);
  EXPECT_EQ(plan.region.size(), 10u);
  // Blocked layouts: NHWC saves nothing, so nothing switches.
  plan = PlanChannelsLast(net, ws, Costed(std::bind(Always, ActivationLayout::kOther, _1)));
  EXPECT_TRUE(plan.region.empty());
  EXPECT_EQ(plan.parts[0].saved, 0);
  EXPECT_EQ(plan.parts[0].cost, borders);
  // Kernels reading NCHW as it is would newly reorder in NHWC.
  plan = PlanChannelsLast(net, ws, Costed(std::bind(Always, ActivationLayout::kNchw, _1)));
  EXPECT_TRUE(plan.region.empty());
  EXPECT_EQ(plan.parts[0].cost, borders + convs);
  // Only the 1x1 conv reads NHWC as it is: 700 saved < 1076 in switches.
  plan = PlanChannelsLast(net, ws, Costed([](const OperatorDef& op) {
                            return op.input(1) == "w3" ? ActivationLayout::kNhwc
                                                       : ActivationLayout::kOther;
                          }));
  EXPECT_EQ(plan.parts[0].saved, 700);
  EXPECT_TRUE(plan.region.empty());
  // With the costed options the emitted net still computes the same.
  Workspace reference;
  CopyTensors(ws, &reference);
  reference.RunNetOnce(net);
  int switched = 0;
  ws.RunNetOnce(
      ChannelsLast(net, &ws, &switched, Costed(std::bind(Always, ActivationLayout::kNhwc, _1))));
  EXPECT_EQ(switched, 10);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(reference, "y")), 1e-5);
}

// Two parts split by a Transpose: a lone convolution never pays (its
// switches in and out cost what it saves); three ops in a row do.
TEST(ChannelsLastTest, EachPartIsKeptOnlyWhereItPays) {
  std::mt19937 rng(10);
  Workspace ws;
  FeedBlock(&ws, &rng);
  FeedUniform(&ws, "w4", {8, 8, 3, 3}, -0.3, 0.3, &rng);
  FeedUniform(&ws, "w5", {8, 8, 3, 3}, -0.3, 0.3, &rng);
  const NetDef net = MakeNet("two_parts",
                             {Conv("x", "w1", "b1", "c1", 3),
                              MakeOp("Transpose", {"c1"}, {"t"}, {IntsArg("axes", {0, 1, 2, 3})}),
                              Conv("t", "w4", "b1", "c4", 3), MakeOp("Relu", {"c4"}, {"c4"}),
                              Conv("c4", "w5", "b1", "y", 3)},
                             {"y"});
  using namespace std::placeholders;
  const transforms::ChannelsLastPlan plan =
      PlanChannelsLast(net, ws, Costed(std::bind(Always, ActivationLayout::kNhwc, _1)));
  ASSERT_EQ(plan.parts.size(), 2u) << plan.ToString(net);
  EXPECT_EQ(plan.parts[0].saved, 648 + 1296);
  EXPECT_EQ(plan.parts[0].cost, 648 + 1296);
  EXPECT_FALSE(plan.parts[0].pays());
  EXPECT_EQ(plan.parts[1].saved, 4 * 1296);
  EXPECT_EQ(plan.parts[1].cost, 2 * 1296);
  EXPECT_EQ(plan.region, (std::set<int>{2, 3, 4})) << plan.ToString(net);
  Workspace reference;
  CopyTensors(ws, &reference);
  reference.RunNetOnce(net);
  ws.RunNetOnce(
      ChannelsLast(net, &ws, nullptr, Costed(std::bind(Always, ActivationLayout::kNhwc, _1))));
  EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(reference, "y")), 1e-5);
}

// ConvFusion's sum fusions read their summand in the region's layout too:
// it is switched to NHWC (x, from outside) or renamed (a region value).
TEST(ChannelsLastTest, SumFusionsSwitchTheirSummand) {
  std::mt19937 rng(11);
  Workspace ws;
  FeedBlock(&ws, &rng);
  FeedUniform(&ws, "w4", {4, 4, 3, 3}, -0.3, 0.3, &rng);
  OperatorDef fused = MakeOp("ConvFusion", {"x", "w4", "x"}, {"s"},
                             {IntArg("kernel", 3), IntArg("pad", 1), IntArg("fusion_type", 3)});
  OperatorDef again = MakeOp("ConvFusion", {"s", "w4", "s"}, {"t"},
                             {IntArg("kernel", 3), IntArg("pad", 1), IntArg("fusion_type", 2)});
  const NetDef net = MakeNet("sums", {fused, again}, {"t"});
  Workspace reference;
  CopyTensors(ws, &reference);
  reference.RunNetOnce(net);
  int switched = 0;
  const NetDef out = ChannelsLast(net, &ws, &switched);
  EXPECT_EQ(switched, 2);
  EXPECT_EQ(Count(out, "NCHW2NHWC"), 1);  // x, read twice by the first op
  ws.RunNetOnce(out);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "t"), Values(reference, "t")), 1e-5);
}

// The kernels' own advice (operators/conv_op.cc): decided for a float32
// Conv and ConvFusion, none for the IM2COL engine or an unknown op.
TEST(ChannelsLastTest, ConvKernelsAdviseALayout) {
  const auto shape = [](std::vector<int64_t> dims) {
    TensorShape s;
    for (int64_t d : dims) s.add_dims(d);
    s.set_data_type(TensorProto::FLOAT);
    return s;
  };
  const std::vector<TensorShape> shapes{shape({8, 32, 28, 28}), shape({32, 1, 3, 3}), shape({32})};
  OperatorDef depthwise = Conv("x", "w", "b", "y", 3, 32);
  EXPECT_NE(AdviseLayout(depthwise, shapes), ActivationLayout::kNoPreference);
  OperatorDef fused = depthwise;
  fused.set_type("ConvFusion");
  fused.add_arg()->CopyFrom(IntArg("fusion_type", 1));
  EXPECT_NE(AdviseLayout(fused, shapes), ActivationLayout::kNoPreference);
  OperatorDef im2col = depthwise;
  im2col.set_engine("IM2COL");
  EXPECT_EQ(AdviseLayout(im2col, shapes), ActivationLayout::kNoPreference);
  // Shapes that do not fit the op: no advice rather than an error.
  EXPECT_EQ(AdviseLayout(depthwise, {shape({8, 30, 28, 28}), shape({32, 1, 3, 3})}),
            ActivationLayout::kNoPreference);
  EXPECT_EQ(AdviseLayout(MakeOp("Relu", {"x"}, {"y"}), shapes), ActivationLayout::kNoPreference);
}

}  // namespace
}  // namespace testing
}  // namespace doppio
