// The mixed-precision rewrite (parallel/mixed_precision.h) as a pure
// function, the loss-scaling phases of the Parallelize pass, and one
// lowered MLP trained in a workspace against its float32 twin.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backward.h"
#include "core/workspace.h"
#include "parallel/data_parallel_phases.h"
#include "parallel/mixed_precision.h"
#include "tests/parallel/mlp_template.h"
#include "tests/parallel/workspace_feed.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::Fetch;
using testing::FeedFloats;
using testing::FeedInts;
using testing::FloatArg;
using testing::IntArg;
using testing::MakeOp;
using testing::MlpTemplate;
using testing::TwoDevices;

// "Cast a->b" per cast op, the op type otherwise, with its inputs.
std::vector<std::string> Describe(const NetDef& net) {
  std::vector<std::string> lines;
  for (const OperatorDef& op : net.op()) {
    std::string line = op.type() + "(";
    for (int i = 0; i < op.input_size(); ++i) line += (i ? "," : "") + op.input(i);
    line += ")";
    lines.push_back(line);
  }
  return lines;
}

int64_t CastTarget(const OperatorDef& op) {
  for (const Argument& arg : op.arg()) {
    if (arg.name() == "to") return arg.i();
  }
  return -1;
}

TEST(MixedPrecisionTest, MlpRunsItsFcsAndReluLowAndItsLossInFloat32) {
  const LoweredNet lowered = LowerPrecision(MlpTemplate().net, DataType::kBFloat16);
  EXPECT_EQ(Describe(lowered.net),
            (std::vector<std::string>{"Cast(data)", "Cast(w1)", "Cast(b1)",
                                      "FC(data_bf16,w1_bf16,b1_bf16)", "Relu(h)", "Cast(w2)",
                                      "Cast(b2)", "FC(h,w2_bf16,b2_bf16)", "Cast(logits)",
                                      "SoftmaxWithLoss(logits_fp32,label)"}));
  EXPECT_EQ(CastTarget(lowered.net.op(0)), TensorProto::BFLOAT16);
  EXPECT_EQ(CastTarget(lowered.net.op(8)), TensorProto::FLOAT);
  ASSERT_EQ(lowered.plan.low_ops.size(), 3u);
  EXPECT_EQ(lowered.plan.low_ops[1], std::make_pair(1, std::string("Relu")));
  EXPECT_NE(lowered.plan.ToString().find("cast logits -> logits_fp32"), std::string::npos);
  // float32 is the identity.
  const LoweredNet same = LowerPrecision(MlpTemplate().net, DataType::kFloat);
  EXPECT_EQ(same.net.SerializeAsString(), MlpTemplate().net.SerializeAsString());
  EXPECT_EQ(same.plan.ToString(), "");
}

TEST(MixedPrecisionTest, CastsAreReusedUntilTheBlobIsWrittenAndNamesStayFree) {
  NetDef net;
  *net.add_op() = MakeOp("FC", {"x", "w", "b"}, {"y1"});
  *net.add_op() = MakeOp("FC", {"x", "w", "b"}, {"y2"});
  *net.add_op() = MakeOp("Scale", {"w"}, {"w"}, {FloatArg("scale", 2.0f)});
  *net.add_op() = MakeOp("FC", {"x", "w", "b"}, {"y3"});
  *net.add_op() = MakeOp("Copy", {"x"}, {"x_fp16"});  // the name the pass would take
  const LoweredNet lowered = LowerPrecision(net, DataType::kFloat16);
  int casts_of_w = 0;
  std::set<std::string> names;
  for (const OperatorDef& op : lowered.net.op()) {
    if (op.type() == "Cast" && op.input(0) == "w") ++casts_of_w;
    if (op.type() == "Cast") names.insert(op.output(0));
  }
  EXPECT_EQ(casts_of_w, 2);  // before y1 (reused by y2) and after the Scale
  EXPECT_EQ(names.count("x_fp16"), 0u);
  EXPECT_EQ(names.count("x_fp16_1"), 1u);
  EXPECT_EQ(names.count("w_fp16_1"), 1u);  // the second cast of w
}

TEST(MixedPrecisionTest, MixedOperandsStayFloat32AndBatchNormStatisticsAreNotCast) {
  NetDef net;
  *net.add_op() = MakeOp("Conv", {"x", "w"}, {"c"}, {IntArg("kernel", 3)});
  *net.add_op() = MakeOp("SpatialBN", {"c", "s", "bias", "rm", "riv"},
                         {"bn", "rm", "riv", "sm", "siv"}, {IntArg("is_test", 0)});
  *net.add_op() = MakeOp("Add", {"bn", "shift"}, {"sum"}, {IntArg("broadcast", 1)});
  *net.add_op() = MakeOp("Relu", {"sum"}, {"sum"});
  const LoweredNet lowered = LowerPrecision(net, DataType::kBFloat16);
  EXPECT_EQ(Describe(lowered.net),
            (std::vector<std::string>{"Cast(x)", "Cast(w)", "Conv(x_bf16,w_bf16)",
                                      "SpatialBN(c,s,bias,rm,riv)", "Cast(bn)",
                                      "Add(bn_fp32,shift)", "Relu(sum)"}));
  ASSERT_EQ(lowered.plan.low_ops.size(), 2u);  // Conv and SpatialBN; Add and Relu float32
}

TEST(MixedPrecisionTest, LoweringIsIdempotentAndKeepsTheNetsOwnConversions) {
  for (DataType low : {DataType::kBFloat16, DataType::kFloat16}) {
    const LoweredNet once = LowerPrecision(MlpTemplate().net, low);
    const LoweredNet twice = LowerPrecision(once.net, low);
    EXPECT_EQ(twice.net.SerializeAsString(), once.net.SerializeAsString()) << DataTypeName(low);
    EXPECT_TRUE(twice.plan.casts.empty());
  }
  // Caffe2's float16 style: the net converts itself; FC reads the half blob.
  NetDef net;
  *net.add_op() = MakeOp("FloatToHalf", {"x"}, {"x16"});
  *net.add_op() = MakeOp("FC", {"x16", "w", "b"}, {"y"});
  *net.add_op() = MakeOp("HalfToFloat", {"y"}, {"y32"});
  *net.add_op() = MakeOp("Softmax", {"y32"}, {"p"});
  EXPECT_EQ(Describe(LowerPrecision(net, DataType::kFloat16).net),
            (std::vector<std::string>{"FloatToHalf(x)", "Cast(w)", "Cast(b)",
                                      "FC(x16,w_fp16,b_fp16)", "HalfToFloat(y)",
                                      "Softmax(y32)"}));
  // Cast's `to` by name, read as the op reads it; a bad one is the op's error.
  NetDef named;
  *named.add_op() = MakeOp("Cast", {"x"}, {"xb"}, {testing::StringArg("to", "bfloat16")});
  *named.add_op() = MakeOp("FC", {"xb", "w", "b"}, {"y"});
  EXPECT_EQ(Describe(LowerPrecision(named, DataType::kBFloat16).net)[3], "FC(xb,w_bf16,b_bf16)");
  named.mutable_op(0)->mutable_arg(0)->set_s("halfish");
  EXPECT_NE(ErrorOf([&] { LowerPrecision(named, DataType::kBFloat16); }).find("op Cast"),
            std::string::npos);
}

TEST(MixedPrecisionTest, ACarriedBackwardNeedsALoweredNet) {
  ParallelizeOptions options = TwoDevices();
  options.precision = "bf16";
  DataParallelTemplate plain = MlpTemplate();
  plain.backward = AddGradientOperators(plain.net, plain.losses);
  EXPECT_NE(ErrorOf([&] { Parallelize(plain, options); }).find("is not lowered"),
            std::string::npos);
  DataParallelTemplate lowered = MlpTemplate();
  lowered.net = LowerPrecision(lowered.net, DataType::kBFloat16).net;
  lowered.backward = AddGradientOperators(lowered.net, lowered.losses);
  const Parallelized result = Parallelize(lowered, options);
  int casts = 0;
  for (const OperatorDef& op : result.net.op()) casts += op.type() == "Cast";
  EXPECT_GT(casts, 0);
}

TEST(MixedPrecisionTest, UnknownPrecisionIsRefused) {
  EXPECT_NE(ErrorOf([] { ParsePrecision("fp8"); }).find("'fp8'"), std::string::npos);
  EXPECT_EQ(ParsePrecision("bfloat16"), DataType::kBFloat16);
  EXPECT_EQ(ParsePrecision("fp16"), DataType::kFloat16);
}

// The MLP, lowered to `low` (or not), one forward and backward on fixed data.
std::vector<std::vector<float>> MlpGradients(DataType low) {
  DataParallelTemplate model = MlpTemplate();
  const NetDef net = LowerPrecision(model.net, low).net;
  const BackwardResult backward = AddGradientOperators(net, model.losses);
  NetDef train = net;
  for (const OperatorDef& op : backward.ops) *train.add_op() = op;
  Workspace ws;
  ws.RunNetOnce(model.param_init_net);
  // The same weights in both nets (XavierFill draws unseeded).
  for (const char* w : {"w1", "w2"}) {
    Tensor* tensor = ws.GetBlob(w)->GetMutableTensor();
    for (int64_t i = 0; i < tensor->numel(); ++i) {
      tensor->mutable_data<float>()[i] = 0.5f * std::sin(1.3f * i + (w[1] == '2'));
    }
  }
  std::vector<float> data(8 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.7f * i);
  FeedFloats(&ws, "data", {8, 4}, data);
  FeedInts(&ws, "label", {0, 1, 2, 0, 1, 2, 1, 0});
  ws.RunNetOnce(train);
  std::vector<std::vector<float>> grads;
  for (const std::string& param : testing::kParams) {
    const std::string grad = backward.gradients.at(param).dense;
    EXPECT_EQ(ws.GetBlob(grad)->GetTensor().dtype(), DataType::kFloat) << grad;
    grads.push_back(Fetch(&ws, grad));
  }
  return grads;
}

TEST(MixedPrecisionTest, LoweredMlpGivesFloat32GradientsCloseToTheFloat32Net) {
  const auto reference = MlpGradients(DataType::kFloat);
  for (DataType low : {DataType::kBFloat16, DataType::kFloat16}) {
    const auto grads = MlpGradients(low);
    // Unit roundoff 2^-8 and 2^-11, over a few roundings per value.
    const double tolerance = low == DataType::kBFloat16 ? 5e-2 : 1e-2;
    for (size_t p = 0; p < grads.size(); ++p) {
      double scale = 0, diff = 0;
      for (size_t i = 0; i < grads[p].size(); ++i) {
        scale = std::max(scale, std::fabs(double{reference[p][i]}));
        diff = std::max(diff, std::fabs(double{grads[p][i]} - reference[p][i]));
      }
      EXPECT_GT(diff, 0.0) << "param " << p << ": no rounding at all";
      EXPECT_LE(diff, tolerance * scale) << "param " << p << " in " << DataTypeName(low);
    }
  }
}

// ---- loss scaling in the pass ----

ParallelizeOptions Fp16TwoDevices() {
  ParallelizeOptions options = TwoDevices();
  options.precision = "fp16";
  return options;
}

TEST(MixedPrecisionTest, Fp16ScalesTheLossSeedAndGuardsTheUpdates) {
  const Parallelized result = Parallelize(MlpTemplate(), Fp16TwoDevices());
  EXPECT_TRUE(result.plan.loss_scaling.enabled);
  EXPECT_EQ(result.plan.precision.low, DataType::kFloat16);
  // The seed: a ConstantFill of the loss's gradient, then its Mul by the scale.
  int seeds = 0, unscales = 0, guards = 0, schedules = 0;
  for (int i = 0; i < result.net.op_size(); ++i) {
    const OperatorDef& op = result.net.op(i);
    if (op.type() == "Mul" && op.input(1).find(kLossScaleBlob) != std::string::npos) {
      // Op-major: each replica's seed fill, then each replica's Mul.
      bool seeded = false;
      for (int j = 0; j < i; ++j) {
        const OperatorDef& fill = result.net.op(j);
        seeded |= fill.type() == "ConstantFill" && fill.output(0) == op.input(0);
      }
      EXPECT_TRUE(seeded) << op.input(0);
      EXPECT_EQ(op.input(1).substr(0, 6), op.input(0).substr(0, 6));  // the replica's own scale
      ++seeds;
    }
    if (op.type() == "UnscaleGradients") {
      EXPECT_EQ(op.input_size(), 5);  // four gradients and the scale
      ++unscales;
    }
    if (op.type() == "If") {
      EXPECT_EQ(op.input(0), std::string("cpu_0/") + kGradientsFiniteBlob);
      int updates = 0;
      for (const OperatorDef& inner : op.arg(0).n().op()) updates += inner.type() == "WeightedSum";
      EXPECT_EQ(updates, 8);  // four params on two devices
      ++guards;
    }
    schedules += op.type() == "UpdateLossScale";
  }
  EXPECT_EQ(seeds, 2);
  EXPECT_EQ(unscales, 2);
  EXPECT_EQ(guards, 1);
  EXPECT_EQ(schedules, 2);
  std::set<std::string> scales;
  for (const OperatorDef& op : result.param_init_net.op()) {
    for (const std::string& output : op.output()) {
      if (output == std::string("cpu_0/") + kLossScaleBlob ||
          output == std::string("cpu_3/") + kLossScaleBlob) {
        scales.insert(output);
      }
    }
  }
  EXPECT_EQ(scales.size(), 2u);
  EXPECT_NE(result.plan.ToString().find("dynamic loss scaling from 65536"), std::string::npos);
}

TEST(MixedPrecisionTest, LossScalingDefaultsAndRefusals) {
  ParallelizeOptions bf16 = TwoDevices();
  bf16.precision = "bf16";
  EXPECT_FALSE(Parallelize(MlpTemplate(), bf16).plan.loss_scaling.enabled);
  bf16.dynamic_loss_scale = true;
  EXPECT_TRUE(Parallelize(MlpTemplate(), bf16).plan.loss_scaling.enabled);
  ParallelizeOptions off = Fp16TwoDevices();
  off.dynamic_loss_scale = false;
  EXPECT_FALSE(Parallelize(MlpTemplate(), off).plan.loss_scaling.enabled);

  ParallelizeOptions shared = Fp16TwoDevices();
  shared.shared_model = true;
  EXPECT_NE(ErrorOf([&] { Parallelize(MlpTemplate(), shared); }).find("shared_model"),
            std::string::npos);
  ParallelizeOptions local = Fp16TwoDevices();
  local.local_updates = true;
  EXPECT_NE(ErrorOf([&] { Parallelize(MlpTemplate(), local); }).find("local updates"),
            std::string::npos);
  DataParallelTemplate taken = MlpTemplate();
  *taken.param_init_net.add_op() = MakeOp("ConstantFill", {}, {kLossScaleBlob});
  EXPECT_NE(ErrorOf([&] { Parallelize(taken, Fp16TwoDevices()); }).find("already exists"),
            std::string::npos);
  ParallelizeOptions bad_scale = Fp16TwoDevices();
  bad_scale.init_loss_scale = 0.0f;
  EXPECT_NE(ErrorOf([&] { ValidateParallelizeOptions(bad_scale); }).find("init_loss_scale"),
            std::string::npos);
  ParallelizeOptions cuda = Fp16TwoDevices();
  cuda.device_type = CUDA;
  EXPECT_NE(ErrorOf([&] { ValidateParallelizeOptions(cuda); }).find("CUDA"), std::string::npos);
}

// With sharded optimizer state each process unscales only its gradient
// blocks, so the processes' verdicts are summed before the guarded updates;
// the allgathers of the params stay outside the If (every step runs the
// same collectives).
TEST(MixedPrecisionTest, ShardedStateReducesTheVerdictAndGathersOutsideTheGuard) {
  ParallelizeOptions options = Fp16TwoDevices();
  options.rendezvous.num_shards = 2;
  options.rendezvous.shard_id = 0;
  options.rendezvous.kv_handler = "store";
  options.shard_optimizer_state = true;
  DataParallelTemplate model = MlpTemplate();
  // Momentum state, so there is optimizer state to shard.
  model.param_update_net.clear_op();
  *model.param_init_net.add_op() = MakeOp("ConstantFill", {}, {"lr"},
                                          {testing::IntsArg("shape", {1}), FloatArg("value", 0.1f)});
  for (const std::string& param : testing::kParams) {
    *model.param_init_net.add_op() =
        MakeOp("ConstantFill", {param}, {param + "_momentum"}, {FloatArg("value", 0)});
    *model.param_update_net.add_op() =
        MakeOp("MomentumSGDUpdate", {param + "_grad", param + "_momentum", "lr", param},
               {param + "_grad", param + "_momentum", param}, {FloatArg("momentum", 0.9f)});
  }
  const Parallelized result = Parallelize(model, options);
  std::vector<std::string> order;
  for (const OperatorDef& op : result.net.op()) {
    if (op.type() == "UnscaleGradients" || op.type() == "If" || op.type() == "AllgatherBlocks" ||
        op.type() == "UpdateLossScale" ||
        (op.type() == "Allreduce" && op.input(op.input_size() - 1).find("overflows") !=
                                         std::string::npos)) {
      order.push_back(op.type());
    }
  }
  ASSERT_GE(order.size(), 5u);
  EXPECT_EQ(order[0], "UnscaleGradients");
  EXPECT_EQ(order[1], "Allreduce");
  EXPECT_EQ(order[2], "If");
  EXPECT_EQ(order[3], "AllgatherBlocks");
  EXPECT_EQ(order.back(), "UpdateLossScale");
  for (const OperatorDef& op : result.net.op()) {
    if (op.type() != "If") continue;
    for (const OperatorDef& inner : op.arg(0).n().op()) {
      EXPECT_NE(inner.type(), "AllgatherBlocks");
      EXPECT_NE(inner.type(), "ReduceScatterBlocks");
    }
  }
}

// Two replicas trained with loss scaling: a step on data that overflows
// float16 changes no param and backs the scale off on both replicas; the
// next, ordinary step updates both alike.
TEST(MixedPrecisionTest, OverflowSkipsTheStepOnEveryReplica) {
  ParallelizeOptions options = Fp16TwoDevices();
  options.init_loss_scale = 1024.0f;
  const Parallelized result = Parallelize(MlpTemplate(), options);
  Workspace ws;
  ws.RunNetOnce(result.param_init_net);
  auto feed = [&](float magnitude) {
    for (const char* prefix : {"cpu_0/", "cpu_3/"}) {
      std::vector<float> data(8 * 4);
      for (size_t i = 0; i < data.size(); ++i) data[i] = magnitude * std::cos(0.3f * i);
      FeedFloats(&ws, std::string(prefix) + "data", {8, 4}, data);
      FeedInts(&ws, std::string(prefix) + "label", {0, 1, 2, 0, 1, 2, 1, 0});
    }
  };
  feed(1.0f);
  ws.CreateNet(result.net);
  const std::vector<float> before = Fetch(&ws, "cpu_0/w1");
  feed(60000.0f);  // float16's largest is 65504: the gradients overflow
  ws.RunNet(result.net.name());
  for (const char* prefix : {"cpu_0/", "cpu_3/"}) {
    EXPECT_EQ(Fetch(&ws, std::string(prefix) + "w1"), before) << prefix;
    EXPECT_EQ(Fetch(&ws, std::string(prefix) + kLossScaleBlob), std::vector<float>{512.0f});
    EXPECT_EQ(*ws.GetBlob(std::string(prefix) + kLossScaleSkippedStepsBlob)
                   ->GetTensor()
                   .data<int64_t>(),
              1);
  }
  feed(1.0f);
  ws.RunNet(result.net.name());
  EXPECT_NE(Fetch(&ws, "cpu_0/w1"), before);
  EXPECT_EQ(Fetch(&ws, "cpu_0/w1"), Fetch(&ws, "cpu_3/w1"));
  EXPECT_EQ(*ws.GetBlob(std::string("cpu_3/") + kLossScaleSkippedStepsBlob)
                 ->GetTensor()
                 .data<int64_t>(),
            1);
}

}  // namespace
}  // namespace doppio
