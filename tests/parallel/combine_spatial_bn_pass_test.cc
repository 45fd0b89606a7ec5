// combine_spatial_bn in the Parallelize pass (parallel/combine_spatial_bn.h):
// the rewritten ops and their order (every device's SpatialBN after the
// Allreduce of all devices' ChannelStats; backward likewise with
// ChannelBackpropStats), a forward run whose output is checked against
// batch norm over both devices' data computed here, and the option's
// no-op cases. The training equivalence across device counts is in
// combine_spatial_bn_test.py.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "parallel/combine_spatial_bn.h"
#include "parallel/data_parallel.h"
#include "tests/parallel/workspace_feed.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FeedFloats;
using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

constexpr int kChannels = 2;
constexpr int kInner = 3;

// data [N, 2, 3] -> SpatialBN -> AveragedLoss, params scale and bias.
DataParallelTemplate BnTemplate(bool with_loss) {
  DataParallelTemplate model;
  model.param_init_net.set_name("bn_init");
  const std::vector<std::pair<std::string, float>> fills = {
      {"s", 1.5f}, {"b", 0.25f}, {"rm", 0.0f}, {"rv", 1.0f}};
  for (const auto& fill : fills) {
    *model.param_init_net.add_op() =
        MakeOp("ConstantFill", {}, {fill.first},
               {IntsArg("shape", {kChannels}), FloatArg("value", fill.second)});
  }
  model.net.set_name("bn");
  *model.net.add_op() = MakeOp("SpatialBN", {"data", "s", "b", "rm", "rv"},
                               {"y", "rm", "rv", "y_sm", "y_siv"}, {FloatArg("momentum", 0.5f)});
  if (with_loss) {
    *model.net.add_op() = MakeOp("AveragedLoss", {"y"}, {"loss"});
    model.losses = {"loss"};
  }
  model.params = {"s", "b"};
  model.computed_params = {"rm", "rv"};
  return model;
}

ParallelizeOptions Combined(std::vector<int> devices) {
  ParallelizeOptions options;
  options.devices = std::move(devices);
  options.combine_spatial_bn = true;
  return options;
}

int IndexOf(const NetDef& net, const std::string& type, const std::string& input) {
  for (int i = 0; i < net.op_size(); ++i) {
    for (const std::string& name : net.op(i).input()) {
      if (net.op(i).type() == type && name == input) return i;
    }
  }
  return -1;
}

int NumBatchesArg(const OperatorDef& op) {
  for (const Argument& arg : op.arg()) {
    if (arg.name() == "num_batches") return static_cast<int>(arg.i());
  }
  return 1;
}

TEST(CombineSpatialBNTest, EveryDeviceWaitsForTheReducedStatistics) {
  const Parallelized result = Parallelize(BnTemplate(true), Combined({0, 1}));
  const NetDef& net = result.net;
  const int reduce_sums = IndexOf(net, "Allreduce", "cpu_0/y_channel_sums");
  const int reduce_sumsq = IndexOf(net, "Allreduce", "cpu_0/y_channel_sumsq");
  const int reduce_dscale = IndexOf(net, "Allreduce", "cpu_0/s_grad_all_devices");
  const int reduce_dbias = IndexOf(net, "Allreduce", "cpu_0/b_grad_all_devices");
  ASSERT_GE(reduce_sums, 0);
  ASSERT_GE(reduce_sumsq, 0);
  ASSERT_GE(reduce_dscale, 0);
  ASSERT_GE(reduce_dbias, 0);
  for (const std::string prefix : {"cpu_0/", "cpu_1/"}) {
    SCOPED_TRACE(prefix);
    const int stats = IndexOf(net, "ChannelStats", prefix + "data");
    const int bn = IndexOf(net, "SpatialBN", prefix + "data");
    const int backprop = IndexOf(net, "ChannelBackpropStats", prefix + "y_sm");
    const int grad = IndexOf(net, "SpatialBNGradient", prefix + "data");
    ASSERT_GE(stats, 0);
    ASSERT_GE(bn, 0);
    ASSERT_GE(backprop, 0);
    ASSERT_GE(grad, 0);
    EXPECT_LT(stats, reduce_sums);
    EXPECT_GT(bn, std::max(reduce_sums, reduce_sumsq));
    EXPECT_LT(backprop, reduce_dscale);
    EXPECT_GT(grad, std::max(reduce_dscale, reduce_dbias));
    EXPECT_EQ(net.op(bn).input_size(), 7);
    EXPECT_EQ(net.op(bn).input(5), prefix + "y_channel_sums");
    EXPECT_EQ(net.op(bn).input(6), prefix + "y_channel_sumsq");
    EXPECT_EQ(NumBatchesArg(net.op(bn)), 2);
    EXPECT_EQ(net.op(grad).input_size(), 7);
    EXPECT_EQ(net.op(grad).input(5), prefix + "s_grad_all_devices");
    EXPECT_EQ(NumBatchesArg(net.op(grad)), 2);
    const OperatorDef& backprop_op = net.op(backprop);
    EXPECT_EQ(std::vector<std::string>(backprop_op.input().begin(), backprop_op.input().end()),
              (std::vector<std::string>{prefix + "data", prefix + "y_sm", prefix + "y_siv",
                                        prefix + "y_grad"}));
  }
  // The scale and bias gradients are still summed for the update.
  EXPECT_GE(IndexOf(net, "Allreduce", "cpu_0/s_grad"), 0);
  EXPECT_GE(IndexOf(net, "Allreduce", "cpu_0/b_grad"), 0);
}

TEST(CombineSpatialBNTest, DevicesNormalizeWithTheStatisticsOfAllBatches) {
  const Parallelized result = Parallelize(BnTemplate(false), Combined({0, 2}));
  Workspace ws;
  ws.RunNetOnce(result.param_init_net);
  // Two examples per device, [2, 2, 3] each.
  std::vector<std::vector<float>> data(2);
  for (int d = 0; d < 2; ++d) {
    for (int i = 0; i < 2 * kChannels * kInner; ++i) {
      data[d].push_back(std::sin(1.3f * i + 4.1f * d) * (d + 1) + 0.5f * d);
    }
  }
  FeedFloats(&ws, "cpu_0/data", {2, kChannels, kInner}, data[0]);
  FeedFloats(&ws, "cpu_2/data", {2, kChannels, kInner}, data[1]);
  ws.RunNetOnce(result.net);

  for (int c = 0; c < kChannels; ++c) {
    double sum = 0, sumsq = 0;
    for (const auto& device_data : data) {
      for (int n = 0; n < 2; ++n) {
        for (int k = 0; k < kInner; ++k) {
          const double v = device_data[(n * kChannels + c) * kInner + k];
          sum += v;
          sumsq += v * v;
        }
      }
    }
    const double count = 4.0 * kInner;
    const double mean = sum / count;
    const double var = sumsq / count - mean * mean;
    for (int d = 0; d < 2; ++d) {
      const std::string prefix = d == 0 ? "cpu_0/" : "cpu_2/";
      const Tensor& y = ws.GetBlob(prefix + "y")->GetTensor();
      for (int n = 0; n < 2; ++n) {
        for (int k = 0; k < kInner; ++k) {
          const int i = (n * kChannels + c) * kInner + k;
          const double want = (data[d][i] - mean) / std::sqrt(var + 1e-5) * 1.5 + 0.25;
          EXPECT_NEAR(y.data<float>()[i], want, 1e-4) << prefix << " element " << i;
        }
      }
      // Running statistics: momentum 0.5 from 0 and 1, unbiased variance.
      EXPECT_NEAR(ws.GetBlob(prefix + "rm")->GetTensor().data<float>()[c], 0.5 * mean, 1e-5);
      EXPECT_NEAR(ws.GetBlob(prefix + "rv")->GetTensor().data<float>()[c],
                  0.5 + 0.5 * var * count / (count - 1), 1e-4);
    }
  }
}

TEST(CombineSpatialBNTest, OneDeviceOrTestModeIsLeftAlone) {
  const Parallelized one = Parallelize(BnTemplate(true), Combined({0}));
  for (const OperatorDef& op : one.net.op()) {
    EXPECT_NE(op.type(), "ChannelStats");
    if (op.type() == "SpatialBN") EXPECT_EQ(op.input_size(), 5);
  }
  DataParallelTemplate test_mode = BnTemplate(false);
  OperatorDef* bn = test_mode.net.mutable_op(0);
  bn->mutable_output()->DeleteSubrange(1, 4);
  *bn->add_arg() = testing::IntArg("is_test", 1);
  const Parallelized rewritten = Parallelize(test_mode, Combined({0, 1}));
  for (const OperatorDef& op : rewritten.net.op()) EXPECT_NE(op.type(), "ChannelStats");
}

TEST(CombineSpatialBNTest, NeedsSeveralDevices) {
  const DataParallelTemplate model = BnTemplate(true);
  std::vector<OperatorDef> ops(model.net.op().begin(), model.net.op().end());
  EXPECT_NE(ErrorOf([&] { CombineSpatialBN(&ops, 1); }).find("more than one device"),
            std::string::npos);
}

}  // namespace
}  // namespace doppio
