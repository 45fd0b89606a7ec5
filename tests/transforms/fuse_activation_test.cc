// FuseActivation and the fused kernels: ConvFusion(fusion_type 1) and FC
// with fusion_type 1 compute max(op, 0) (checked against the unfused ops and
// against a loop written here), the pass fuses only what it may, and the
// fused ops refuse what they do not support.

#include "transforms/fuse_activation.h"

#include <gtest/gtest.h>

#include <random>

#include "core/gradient.h"
#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"

namespace doppio {
namespace testing {
namespace {

using transforms::ActivationFusions;
using transforms::FuseActivation;

NetDef ConvReluNet(const std::string& engine, int group, const std::string& order) {
  OperatorDef conv = MakeOp("Conv", {"x", "w", "b"}, {"c"},
                            {IntArg("kernel", 3), IntArg("pad", 1), IntArg("group", group),
                             StringArg("order", order)});
  conv.set_engine(engine);
  return MakeNet("conv_relu", {conv, MakeOp("Relu", {"c"}, {"c"})}, {"c"});
}

void FeedConv(Workspace* ws, int64_t channels, int64_t out_channels, int group,
              const std::string& order, std::mt19937* rng) {
  const bool nchw = order == "NCHW";
  FeedUniform(ws, "x", nchw ? std::vector<int64_t>{2, channels, 7, 7}
                            : std::vector<int64_t>{2, 7, 7, channels}, -1, 1, rng);
  const int64_t cg = channels / group;
  FeedUniform(ws, "w", nchw ? std::vector<int64_t>{out_channels, cg, 3, 3}
                            : std::vector<int64_t>{out_channels, 3, 3, cg}, -0.5, 0.5, rng);
  FeedUniform(ws, "b", {out_channels}, -0.5, 0.5, rng);
}

TEST(FuseActivationTest, ConvReluBecomesConvFusionWithTheSameOutput) {
  std::mt19937 rng(1);
  for (const std::string engine : {"", "IM2COL"}) {
    for (const std::string order : {"NCHW", "NHWC"}) {
      Workspace ws;
      FeedConv(&ws, 5, 16, 1, order, &rng);
      const NetDef net = ConvReluNet(engine, 1, order);
      Workspace unfused_ws;
      CopyTensors(ws, &unfused_ws);
      unfused_ws.RunNetOnce(net);
      ActivationFusions fused;
      const NetDef out = FuseActivation(net, &fused);
      EXPECT_EQ(fused.conv_relu, 1);
      ASSERT_EQ(out.op_size(), 1);
      EXPECT_EQ(out.op(0).type(), "ConvFusion");
      EXPECT_EQ(out.op(0).engine(), engine);
      ws.RunNetOnce(out);
      const std::vector<float> y = Values(ws, "c");
      EXPECT_LT(MaxRelativeDiff(y, Values(unfused_ws, "c")), 1e-5) << engine << " " << order;
      EXPECT_GE(*std::min_element(y.begin(), y.end()), 0.0f);
      EXPECT_GT(std::count(y.begin(), y.end(), 0.0f), 0);  // the Relu clipped something
    }
  }
}

// ConvFusion keeps its reordered filter between runs: later runs with new
// inputs, and with a new filter of another shape, still match Conv + Relu.
TEST(FuseActivationTest, ConvFusionStaysRightAcrossRuns) {
  std::mt19937 rng(8);
  Workspace ws;
  FeedConv(&ws, 8, 16, 1, "NCHW", &rng);
  const NetDef net = ConvReluNet("", 1, "NCHW");
  const NetDef fused = FuseActivation(net);
  ws.CreateNet(fused);
  for (int run = 0; run < 3; ++run) {
    if (run == 2) {  // another filter (and output channel count)
      FeedUniform(&ws, "w", {24, 8, 3, 3}, -0.5, 0.5, &rng);
      FeedUniform(&ws, "b", {24}, -0.5, 0.5, &rng);
    }
    FeedUniform(&ws, "x", {2, 8, 7, 7}, -1, 1, &rng);
    Workspace unfused_ws;
    CopyTensors(ws, &unfused_ws);
    unfused_ws.RunNetOnce(net);
    ws.RunNet(fused.name());
    EXPECT_LT(MaxRelativeDiff(Values(ws, "c"), Values(unfused_ws, "c")), 1e-5) << "run " << run;
  }
}

// FC + Relu against a loop written here: y = max(x W^T + b, 0).
TEST(FuseActivationTest, FCReluMatchesAReferenceLoop) {
  std::mt19937 rng(2);
  const int M = 5, K = 7, N = 6;
  Workspace ws;
  FeedUniform(&ws, "x", {M, K}, -1, 1, &rng);
  FeedUniform(&ws, "w", {N, K}, -1, 1, &rng);
  FeedUniform(&ws, "b", {N}, -1, 1, &rng);
  const NetDef net = MakeNet("fc_relu", {MakeOp("FC", {"x", "w", "b"}, {"h"}),
                                         MakeOp("Relu", {"h"}, {"y"})}, {"y"});
  ActivationFusions fused;
  const NetDef out = FuseActivation(net, &fused);
  EXPECT_EQ(fused.fc_relu, 1);
  ASSERT_EQ(out.op_size(), 1);
  EXPECT_EQ(out.op(0).type(), "FC");
  EXPECT_EQ(out.op(0).output(0), "y");
  ws.RunNetOnce(out);
  const std::vector<float> x = Values(ws, "x"), w = Values(ws, "w"), b = Values(ws, "b");
  const std::vector<float> y = Values(ws, "y");
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double sum = b[n];
      for (int k = 0; k < K; ++k) sum += double(x[m * K + k]) * w[n * K + k];
      EXPECT_NEAR(y[m * N + n], std::max(sum, 0.0), 1e-5);
    }
  }
  EXPECT_FALSE(ws.HasBlob("h"));
}

void ExpectUnchanged(const NetDef& net) {
  ActivationFusions fused;
  const NetDef out = FuseActivation(net, &fused);
  EXPECT_EQ(fused.conv_relu + fused.fc_relu, 0);
  EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString());
}

TEST(FuseActivationTest, LeavesUnsafePatternsAlone) {
  // Groups: Caffe2 fuses single-group convolutions only.
  ExpectUnchanged(ConvReluNet("", 2, "NCHW"));
  // The intermediate has another reader.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Relu", {"h"}, {"y"}),
                                MakeOp("Copy", {"h"}, {"z"})}, {"y", "z"}));
  // The intermediate is an external output.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Relu", {"h"}, {"y"})},
                          {"y", "h"}));
  // An op between the two writes the Relu's output.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Copy", {"x"}, {"y"}),
                                MakeOp("Relu", {"h"}, {"y"})}, {"y"}));
  // Not a Relu.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}),
                                MakeOp("Sigmoid", {"h"}, {"y"})}, {"y"}));
  // A Conv on a CUDA device.
  NetDef cuda = ConvReluNet("", 1, "NCHW");
  cuda.mutable_op(0)->mutable_device_option()->set_device_type(1);
  ExpectUnchanged(cuda);
}

TEST(ConvFusionOpTest, RefusesMissingOrUnsupportedFusionType) {
  std::mt19937 rng(4);
  Workspace ws;
  FeedConv(&ws, 2, 4, 1, "NCHW", &rng);
  OperatorDef op = MakeOp("ConvFusion", {"x", "w", "b"}, {"y"}, {IntArg("kernel", 3)});
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(op); }).find("needs the argument fusion_type"),
            std::string::npos);
  *op.add_arg() = IntArg("fusion_type", 2);
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(op); }).find("fusion_type 2 is not supported"),
            std::string::npos);
  OperatorDef fc = MakeOp("FC", {"x", "w", "b"}, {"y"}, {IntArg("fusion_type", 3)});
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(fc); }).find("fusion_type 3 is not supported"),
            std::string::npos);
}

TEST(ConvFusionOpTest, FusedOpsHaveNoGradient) {
  const OperatorDef conv = MakeOp("ConvFusion", {"x", "w", "b"}, {"y"},
                                  {IntArg("kernel", 3), IntArg("fusion_type", 1)});
  const std::vector<GradientWrapper> dY{GradientWrapper{"y_grad"}};
  EXPECT_NE(ErrorOf([&] { GetGradientForOp(conv, dY); }).find("inference-only"),
            std::string::npos);
  const OperatorDef fc = MakeOp("FC", {"x", "w", "b"}, {"y"}, {IntArg("fusion_type", 1)});
  EXPECT_NE(ErrorOf([&] { GetGradientForOp(fc, dY); }).find("no gradient"), std::string::npos);
}

}  // namespace
}  // namespace testing
}  // namespace doppio
