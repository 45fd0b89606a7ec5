// OptimizeForInference on the reference CNN (docs/DESIGN.md section 8, as
// fmnist_train.py exports it) and on random Conv/BN/Relu/FC chains: the
// optimized net computes what the given one does, and has the expected ops.

#include "transforms/optimize_inference.h"

#include <gtest/gtest.h>

#include <random>

#include "core/argument.h"
#include "core/workspace.h"
#include "tests/test_util.h"
#include "tests/transforms/transform_test_util.h"
#include "transforms/net_graph.h"

namespace doppio {
namespace testing {
namespace {

using transforms::InferenceOptimizations;
using transforms::InferencePasses;
using transforms::OptimizeForInference;

// The reference CNN's predict net with random parameters in `ws`.
NetDef ReferenceCnn(Workspace* ws, int64_t batch, std::mt19937* rng) {
  FeedUniform(ws, "data", {batch, 1, 28, 28}, -1, 2, rng);
  FeedUniform(ws, "conv1_w", {32, 1, 3, 3}, -0.33f, 0.33f, rng);
  FeedUniform(ws, "conv1_b", {32}, -0.33f, 0.33f, rng);
  FeedUniform(ws, "conv2_w", {64, 32, 3, 3}, -0.06f, 0.06f, rng);
  FeedUniform(ws, "conv2_b", {64}, -0.06f, 0.06f, rng);
  FeedBatchNormParams(ws, "bn1", 32, rng);
  FeedBatchNormParams(ws, "bn2", 64, rng);
  FeedUniform(ws, "fc3_w", {128, 3136}, -0.018f, 0.018f, rng);
  FeedUniform(ws, "fc3_b", {128}, -0.018f, 0.018f, rng);
  FeedUniform(ws, "pred_w", {10, 128}, -0.09f, 0.09f, rng);
  FeedUniform(ws, "pred_b", {10}, -0.09f, 0.09f, rng);
  const std::vector<Argument> conv_args{IntArg("kernel", 3), IntArg("pad", 1)};
  const std::vector<Argument> pool_args{IntArg("kernel", 2), IntArg("stride", 2)};
  return MakeNet(
      "reference_cnn",
      {MakeOp("Conv", {"data", "conv1_w", "conv1_b"}, {"conv1"}, conv_args),
       BatchNorm("bn1", "conv1", "bn1"), MakeOp("Relu", {"bn1"}, {"bn1"}),
       MakeOp("MaxPool", {"bn1"}, {"pool1"}, pool_args),
       MakeOp("Conv", {"pool1", "conv2_w", "conv2_b"}, {"conv2"}, conv_args),
       BatchNorm("bn2", "conv2", "bn2"), MakeOp("Relu", {"bn2"}, {"bn2"}),
       MakeOp("MaxPool", {"bn2"}, {"pool2"}, pool_args),
       MakeOp("FC", {"pool2", "fc3_w", "fc3_b"}, {"fc3"}), MakeOp("Relu", {"fc3"}, {"fc3"}),
       MakeOp("FC", {"fc3", "pred_w", "pred_b"}, {"pred"}),
       MakeOp("Softmax", {"pred"}, {"softmax"})},
      {"softmax"});
}

// As fmnist_train.py exports it: every input declared, which makes the net
// check that each input is declared or produced.
NetDef WithDeclaredInputs(NetDef net) {
  for (const char* name :
       {"data", "conv1_w", "conv1_b", "conv2_w", "conv2_b", "bn1_s", "bn1_b", "bn1_rm", "bn1_riv",
        "bn2_s", "bn2_b", "bn2_rm", "bn2_riv", "fc3_w", "fc3_b", "pred_w", "pred_b"}) {
    net.add_external_input(name);
  }
  return net;
}

TEST(OptimizeForInferenceTest, ReferenceCnnMatchesTheGivenNet) {
  for (int64_t batch : {1, 5}) {
    std::mt19937 rng(static_cast<unsigned>(batch));
    Workspace ws;
    const NetDef net = WithDeclaredInputs(ReferenceCnn(&ws, batch, &rng));
    Workspace given_ws;
    CopyTensors(ws, &given_ws);
    given_ws.RunNetOnce(net);
    InferenceOptimizations done;
    const NetDef optimized = OptimizeForInference(net, &ws, {}, &done);
    EXPECT_EQ(done.conv_bn, 2);
    EXPECT_EQ(done.conv_relu, 2);
    EXPECT_EQ(done.fc_relu, 1);
    // Conv, Relu in place already; nothing left for the in-place pass.
    EXPECT_EQ(done.inplace, 0);
    EXPECT_EQ(optimized.op_size(), 7);
    EXPECT_EQ(CountOps(optimized, "ConvFusion"), 2);
    EXPECT_EQ(CountOps(optimized, "SpatialBN"), 0);
    EXPECT_EQ(CountOps(optimized, "Relu"), 0);
    ws.RunNetOnce(optimized);
    const std::vector<float> expected = Values(given_ws, "softmax");
    const std::vector<float> got = Values(ws, "softmax");
    EXPECT_LT(MaxRelativeDiff(got, expected), 1e-5);
    for (int64_t n = 0; n < batch; ++n) {  // same predicted class
      const auto row = [&](const std::vector<float>& v) {
        return std::max_element(v.begin() + n * 10, v.begin() + n * 10 + 10) - v.begin();
      };
      EXPECT_EQ(row(got), row(expected));
    }
  }
}

TEST(OptimizeForInferenceTest, KeptBlobsSurviveAndStayUndeclared) {
  std::mt19937 rng(3);
  Workspace ws;
  const NetDef net = ReferenceCnn(&ws, 2, &rng);
  Workspace given_ws;
  CopyTensors(ws, &given_ws);
  given_ws.RunNetOnce(net);
  InferenceOptimizations done;
  const NetDef optimized = OptimizeForInference(net, &ws, {"conv2", "fc3"}, &done);
  EXPECT_EQ(done.conv_bn, 1);  // conv2 is kept, so bn2 cannot be folded
  EXPECT_EQ(optimized.external_output_size(), 1);
  ws.RunNetOnce(optimized);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "conv2"), Values(given_ws, "conv2")), 1e-5);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "fc3"), Values(given_ws, "fc3")), 1e-5);
}

TEST(OptimizeForInferenceTest, SinkBlobsAreWhatTheNetLeavesBehind) {
  const NetDef net = MakeNet(
      "sinks",
      {MakeOp("Relu", {"x"}, {"a"}), MakeOp("Sigmoid", {"a"}, {"b"}), MakeOp("Relu", {"a"}, {"a"}),
       MakeOp("Tanh", {"x"}, {"c"}), MakeOp("Copy", {"c"}, {"d"})},
      {});
  // a is read by Sigmoid, then overwritten in place and read by no one.
  EXPECT_EQ(transforms::SinkBlobs(net), (std::vector<std::string>{"b", "a", "d"}));
}

// Caffe2 nets often declare no external outputs; the passes must then keep
// what the net leaves behind (an out-of-place Sigmoid at the end would
// otherwise run in place and its output blob never be written).
TEST(OptimizeForInferenceTest, UndeclaredOutputsAreKept) {
  std::mt19937 rng(5);
  Workspace ws;
  FeedUniform(&ws, "x", {2, 3, 5, 5}, -1, 1, &rng);
  FeedUniform(&ws, "w", {4, 3, 3, 3}, -0.5, 0.5, &rng);
  FeedUniform(&ws, "fcw", {6, 100}, -0.3, 0.3, &rng);
  FeedUniform(&ws, "fcb", {6}, -0.3, 0.3, &rng);
  const NetDef net =
      MakeNet("undeclared",
              {MakeOp("Conv", {"x", "w"}, {"conv"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
               MakeOp("Relu", {"conv"}, {"relu"}), MakeOp("FC", {"relu", "fcw", "fcb"}, {"fc"}),
               MakeOp("Sigmoid", {"fc"}, {"prob"})},
              {});
  ASSERT_EQ(net.external_output_size(), 0);
  Workspace given_ws;
  CopyTensors(ws, &given_ws);
  given_ws.RunNetOnce(net);
  InferenceOptimizations done;
  const NetDef optimized = OptimizeForInference(net, &ws, {}, &done);
  EXPECT_EQ(done.conv_relu, 1);
  EXPECT_EQ(done.inplace, 0);
  EXPECT_EQ(optimized.external_output_size(), 0);
  ws.RunNetOnce(optimized);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "prob"), Values(given_ws, "prob")), 1e-5);
}

// conv_inference: plain CPU Convs get training_mode 0 (an inference
// primitive); fused, CUDA and already-marked ones are left; the marked net
// computes the same.
TEST(OptimizeForInferenceTest, PlainCpuConvsAreMarkedForInference) {
  std::mt19937 rng(6);
  Workspace ws;
  FeedUniform(&ws, "x", {2, 3, 6, 6}, -1, 1, &rng);
  FeedUniform(&ws, "w", {4, 3, 3, 3}, -0.5, 0.5, &rng);
  OperatorDef cuda = MakeOp("Conv", {"x", "w"}, {"on_gpu"}, {IntArg("kernel", 3)});
  cuda.mutable_device_option()->set_device_type(1);
  const NetDef net = MakeNet(
      "convs",
      {MakeOp("Conv", {"x", "w"}, {"a"}, {IntArg("kernel", 3), IntArg("pad", 1)}),
       MakeOp("Conv", {"x", "w"}, {"b"}, {IntArg("kernel", 3), IntArg("training_mode", 1)}),
       MakeOp("ConvFusion", {"x", "w"}, {"c"}, {IntArg("kernel", 3), IntArg("fusion_type", 1)}),
       cuda},
      {"a", "b", "c", "on_gpu"});
  int marked = 0;
  const NetDef out = transforms::MarkConvsForInference(net, &marked);
  EXPECT_EQ(marked, 1);
  EXPECT_EQ(ArgumentHelper(out.op(0)).GetSingle<int>("training_mode", -1), 0);
  EXPECT_EQ(ArgumentHelper(out.op(1)).GetSingle<int>("training_mode", -1), 1);
  EXPECT_FALSE(ArgumentHelper(out.op(2)).Has("training_mode"));
  EXPECT_FALSE(ArgumentHelper(out.op(3)).Has("training_mode"));
  Workspace given_ws;
  CopyTensors(ws, &given_ws);
  NetDef cpu_only = net;
  cpu_only.mutable_op()->RemoveLast();
  given_ws.RunNetOnce(cpu_only);
  NetDef marked_cpu = out;
  marked_cpu.mutable_op()->RemoveLast();
  ws.RunNetOnce(marked_cpu);
  EXPECT_LT(MaxRelativeDiff(Values(ws, "a"), Values(given_ws, "a")), 1e-5);
}

TEST(OptimizeForInferenceTest, PassSelection) {
  std::mt19937 rng(4);
  Workspace ws;
  const NetDef net = ReferenceCnn(&ws, 1, &rng);
  InferenceOptimizations done;
  OptimizeForInference(net, &ws, {}, &done, InferencePasses::Parse("activation"));
  EXPECT_EQ(done.conv_bn, 0);
  EXPECT_EQ(done.conv_relu, 0);  // each Conv still feeds a SpatialBN
  EXPECT_EQ(done.fc_relu, 1);
  const NetDef same = OptimizeForInference(net, &ws, {}, &done, InferencePasses::Parse("none"));
  EXPECT_EQ(same.SerializeAsString(), net.SerializeAsString());
  EXPECT_NE(ErrorOf([] { InferencePasses::Parse("conv_bn,fold_everything"); })
                .find("unknown inference pass 'fold_everything'"),
            std::string::npos);
}

// Random chains of Conv (+ SpatialBN) (+ Relu) and FC (+ Relu), some
// activations out of place, some intermediates also read by a Sum at the
// end: the optimized net's output matches the given one's.
TEST(OptimizeForInferenceTest, RandomNetsMatchTheGivenNet) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> coin(0, 1), channels(1, 6);
  for (int trial = 0; trial < 15; ++trial) {
    Workspace ws;
    std::vector<OperatorDef> ops;
    int64_t c = channels(rng);
    FeedUniform(&ws, "x", {2, c, 6, 6}, -1, 1, &rng);
    std::string current = "x";
    std::vector<std::string> side_reads;
    const int layers = 2 + trial % 3;
    for (int layer = 0; layer < layers; ++layer) {
      const std::string id = std::to_string(layer);
      const int64_t m = channels(rng);
      FeedUniform(&ws, "w" + id, {m, c, 3, 3}, -0.5, 0.5, &rng);
      std::vector<std::string> inputs{current, "w" + id};
      if (coin(rng)) {
        FeedUniform(&ws, "b" + id, {m}, -0.5, 0.5, &rng);
        inputs.push_back("b" + id);
      }
      ops.push_back(MakeOp("Conv", inputs, {"c" + id}, {IntArg("kernel", 3), IntArg("pad", 1)}));
      current = "c" + id;
      if (coin(rng)) {
        FeedBatchNormParams(&ws, "bn" + id, m, &rng);
        ops.push_back(BatchNorm("bn" + id, current, "n" + id));
        current = "n" + id;
      }
      if (coin(rng)) {
        const std::string out = coin(rng) ? current : "r" + id;
        ops.push_back(MakeOp("Relu", {current}, {out}));
        current = out;
      }
      if (coin(rng) && coin(rng)) side_reads.push_back(current);
      c = m;
    }
    ops.push_back(MakeOp("FC", {current, "fcw", "fcb"}, {"h"}));
    FeedUniform(&ws, "fcw", {4, c * 36}, -0.3, 0.3, &rng);
    FeedUniform(&ws, "fcb", {4}, -0.3, 0.3, &rng);
    ops.push_back(MakeOp("Relu", {"h"}, {"y"}));
    std::vector<std::string> outputs{"y"};
    // Side readers make their blobs live past the next op.
    for (size_t i = 0; i < side_reads.size(); ++i) {
      ops.push_back(MakeOp("Copy", {side_reads[i]}, {"side" + std::to_string(i)}));
      outputs.push_back("side" + std::to_string(i));
    }
    const NetDef net = MakeNet("random", ops, outputs);
    Workspace given_ws;
    CopyTensors(ws, &given_ws);
    given_ws.RunNetOnce(net);
    const NetDef optimized = OptimizeForInference(net, &ws);
    ws.RunNetOnce(optimized);
    for (const std::string& output : outputs) {
      EXPECT_LT(MaxRelativeDiff(Values(ws, output), Values(given_ws, output)), 2e-5)
          << "trial " << trial << " output " << output << "\n"
          << net.DebugString() << "\noptimized:\n" << optimized.DebugString();
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace doppio
