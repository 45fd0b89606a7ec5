// FuseActivation and the fused kernels: ConvFusion(fusion_type 1) computes
// its activation (Relu by default) and FC with fusion_type 1 max(op, 0)
// (checked against the unfused ops and against a loop written here), the
// Sigmoid * x -> Swish rewrite keeps the value, the pass fuses only what it
// may, and the fused ops refuse what they do not support.

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
  EXPECT_EQ(fused.swish + fused.conv_relu + fused.conv_activation + fused.fc_relu, 0);
  EXPECT_EQ(out.SerializeAsString(), net.SerializeAsString());
}

// Every activation ConvFusion applies, on plain, grouped and depthwise
// convolutions through oneDNN and im2col: the fused op computes what Conv and
// the activation op compute one after the other.
TEST(FuseActivationTest, EveryConvActivationMatchesTheUnfusedOps) {
  const std::vector<OperatorDef> activations = {
      MakeOp("Relu", {"c"}, {"y"}),
      MakeOp("LeakyRelu", {"c"}, {"y"}, {FloatArg("alpha", 0.2f)}),
      MakeOp("Clip", {"c"}, {"y"}, {FloatArg("min", -0.1f), FloatArg("max", 0.3f)}),
      MakeOp("Clip", {"c"}, {"y"}, {FloatArg("max", 0.25f)}),
      MakeOp("Sigmoid", {"c"}, {"y"}),
      MakeOp("Tanh", {"c"}, {"y"}),
      MakeOp("Elu", {"c"}, {"y"}, {FloatArg("alpha", 0.5f)}),
      MakeOp("Swish", {"c"}, {"y"}),
      MakeOp("HardSwish", {"c"}, {"y"}),
  };
  std::mt19937 rng(5);
  for (const OperatorDef& activation : activations) {
    for (const int group : {1, 2, 8}) {
      for (const std::string engine : {"", "IM2COL"}) {
        for (const std::string order : {"NCHW", "NHWC"}) {
          const std::string where = activation.DebugString() + " group " + std::to_string(group) +
                                    " " + engine + " " + order;
          Workspace ws;
          FeedConv(&ws, 8, 16, group, order, &rng);
          OperatorDef conv = ConvReluNet(engine, group, order).op(0);
          const NetDef net = MakeNet("conv_act", {conv, activation}, {"y"});
          Workspace unfused_ws;
          CopyTensors(ws, &unfused_ws);
          unfused_ws.RunNetOnce(net);
          ActivationFusions fused;
          const NetDef out = FuseActivation(net, &fused);
          ASSERT_EQ(out.op_size(), 1) << where;
          EXPECT_EQ(out.op(0).type(), "ConvFusion");
          EXPECT_EQ(fused.conv_relu + fused.conv_activation, 1);
          EXPECT_EQ(fused.conv_relu, activation.type() == "Relu" ? 1 : 0);
          ws.RunNetOnce(out);
          EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(unfused_ws, "y")), 1e-5) << where;
        }
      }
    }
  }
}

// Sigmoid(x) * x, either operand order, becomes Swish(x).
TEST(FuseActivationTest, SigmoidTimesInputBecomesSwish) {
  std::mt19937 rng(6);
  for (const bool sigmoid_first : {true, false}) {
    Workspace ws;
    FeedUniform(&ws, "x", {3, 70, 50}, -6, 6, &rng);
    const std::vector<std::string> operands =
        sigmoid_first ? std::vector<std::string>{"s", "x"} : std::vector<std::string>{"x", "s"};
    const NetDef net =
        MakeNet("silu", {MakeOp("Sigmoid", {"x"}, {"s"}), MakeOp("Mul", operands, {"y"})}, {"y"});
    Workspace unfused_ws;
    CopyTensors(ws, &unfused_ws);
    unfused_ws.RunNetOnce(net);
    ActivationFusions fused;
    const NetDef out = FuseActivation(net, &fused);
    EXPECT_EQ(fused.swish, 1);
    ASSERT_EQ(out.op_size(), 1);
    EXPECT_EQ(out.op(0).type(), "Swish");
    EXPECT_EQ(out.op(0).input(0), "x");
    EXPECT_EQ(out.op(0).output(0), "y");
    ws.RunNetOnce(out);
    EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(unfused_ws, "y")), 1e-5);
  }
  // After a Conv, the Swish then fuses into it.
  NetDef conv_silu = ConvReluNet("", 1, "NCHW");
  conv_silu.mutable_op(1)->CopyFrom(MakeOp("Sigmoid", {"c"}, {"s"}));
  *conv_silu.add_op() = MakeOp("Mul", {"c", "s"}, {"y"});
  conv_silu.clear_external_output();
  conv_silu.add_external_output("y");
  ActivationFusions fused;
  const NetDef out = FuseActivation(conv_silu, &fused);
  EXPECT_EQ(fused.swish, 1);
  EXPECT_EQ(fused.conv_activation, 1);
  ASSERT_EQ(out.op_size(), 1);
  EXPECT_EQ(out.op(0).type(), "ConvFusion");
}

// HardSigmoid(x; 1/6, 1/2) * x, torch's export of hardswish, becomes
// HardSwish(x); other slopes stay as they are.
TEST(FuseActivationTest, HardSigmoidTimesInputBecomesHardSwish) {
  std::mt19937 rng(9);
  Workspace ws;
  FeedUniform(&ws, "x", {2, 50, 60}, -6, 6, &rng);
  const NetDef net = MakeNet(
      "hardswish",
      {MakeOp("HardSigmoid", {"x"}, {"s"}, {FloatArg("alpha", 1.f / 6.f), FloatArg("beta", 0.5f)}),
       MakeOp("Mul", {"x", "s"}, {"y"})},
      {"y"});
  Workspace unfused_ws;
  CopyTensors(ws, &unfused_ws);
  unfused_ws.RunNetOnce(net);
  ActivationFusions fused;
  const NetDef out = FuseActivation(net, &fused);
  EXPECT_EQ(fused.swish, 1);
  ASSERT_EQ(out.op_size(), 1);
  EXPECT_EQ(out.op(0).type(), "HardSwish");
  EXPECT_EQ(out.op(0).arg_size(), 0);
  ws.RunNetOnce(out);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "y"), Values(unfused_ws, "y")), 1e-5);
  // Caffe2's default slope 0.2 is no hardswish.
  NetDef other = net;
  other.mutable_op(0)->clear_arg();
  ExpectUnchanged(other);
}

TEST(FuseActivationTest, LeavesUnsafeSwishPatternsAlone) {
  // In place: s is x, so Mul reads sigmoid(x) twice.
  ExpectUnchanged(
      MakeNet("n", {MakeOp("Sigmoid", {"x"}, {"x"}), MakeOp("Mul", {"x", "x"}, {"y"})}, {"y"}));
  // The other operand is not the Sigmoid's input.
  ExpectUnchanged(
      MakeNet("n", {MakeOp("Sigmoid", {"x"}, {"s"}), MakeOp("Mul", {"s", "z"}, {"y"})}, {"y"}));
  // x changes between the two ops.
  ExpectUnchanged(MakeNet("n",
                          {MakeOp("Sigmoid", {"x"}, {"s"}), MakeOp("Copy", {"z"}, {"x"}),
                           MakeOp("Mul", {"s", "x"}, {"y"})},
                          {"y"}));
  // s is read elsewhere, or handed out.
  ExpectUnchanged(MakeNet("n",
                          {MakeOp("Sigmoid", {"x"}, {"s"}), MakeOp("Mul", {"s", "x"}, {"y"}),
                           MakeOp("Copy", {"s"}, {"z"})},
                          {"y", "z"}));
  ExpectUnchanged(MakeNet("n", {MakeOp("Sigmoid", {"x"}, {"s"}), MakeOp("Mul", {"s", "x"}, {"y"})},
                          {"y", "s"}));
}

TEST(FuseActivationTest, LeavesUnsafePatternsAlone) {
  // The intermediate has another reader.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Relu", {"h"}, {"y"}),
                                MakeOp("Copy", {"h"}, {"z"})}, {"y", "z"}));
  // The intermediate is an external output.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Relu", {"h"}, {"y"})},
                          {"y", "h"}));
  // An op between the two writes the Relu's output.
  ExpectUnchanged(MakeNet("n", {MakeOp("FC", {"x", "w", "b"}, {"h"}), MakeOp("Copy", {"x"}, {"y"}),
                                MakeOp("Relu", {"h"}, {"y"})}, {"y"}));
  // Not an activation ConvFusion applies.
  ExpectUnchanged(
      MakeNet("n", {ConvReluNet("", 1, "NCHW").op(0), MakeOp("Softplus", {"c"}, {"y"})}, {"y"}));
  // FC fuses Relu only.
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
  *op.add_arg() = IntArg("fusion_type", 4);
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(op); }).find("fusion_type 4 is not supported"),
            std::string::npos);
  op.mutable_arg(1)->set_i(1);
  *op.add_arg() = StringArg("activation", "Softplus");
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(op); }).find("activation 'Softplus' cannot be fused"),
            std::string::npos);
  op.mutable_arg(2)->set_s("Clip");
  *op.add_arg() = FloatArg("activation_min", 1.0f);
  *op.add_arg() = FloatArg("activation_max", 0.0f);
  EXPECT_NE(ErrorOf([&] { ws.RunOperatorOnce(op); }).find("is greater than 'activation_max'"),
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
