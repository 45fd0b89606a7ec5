// The Parallelize pass: the structure of the replicated nets (per-device op
// counts and device options, shared blobs kept once, one Allreduce per
// gradient in reverse order of first use after the last device's producer,
// Broadcasts closing the init net), its errors, and a run of the result:
// two devices with half batches each end equal to one device with the
// whole batch.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backward.h"
#include "core/workspace.h"
#include "parallel/data_parallel.h"
#include "tests/parallel/mlp_template.h"
#include "tests/parallel/workspace_feed.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::kParams;
using testing::MlpTemplate;
using testing::TwoDevices;
using testing::FeedFloats;
using testing::FeedInts;
using testing::Fetch;
using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

bool WritesUnder(const OperatorDef& op, const std::string& prefix) {
  return std::any_of(op.output().begin(), op.output().end(), [&](const std::string& blob) {
    return blob.compare(0, prefix.size(), prefix) == 0;
  });
}

int IndexOf(const NetDef& net, const std::string& type, const std::string& first_input) {
  for (int i = 0; i < net.op_size(); ++i) {
    if (net.op(i).type() == type && net.op(i).input_size() > 0 &&
        net.op(i).input(0) == first_input) {
      return i;
    }
  }
  return -1;
}

TEST(ParallelizeTest, TrainNetStructure) {
  const DataParallelTemplate model = MlpTemplate();
  // The backward the pass should clone, counted here independently.
  const int backward_ops = static_cast<int>(AddGradientOperators(model.net, {"avg_loss"}).ops.size());
  const Parallelized result = Parallelize(model, TwoDevices());
  const NetDef& net = result.net;

  for (const std::string& prefix : {std::string("cpu_0/"), std::string("cpu_3/")}) {
    const int device_id = prefix == "cpu_0/" ? 0 : 3;
    int count = 0;
    for (const OperatorDef& op : net.op()) {
      if (op.type() == "Allreduce" || !WritesUnder(op, prefix)) continue;
      ++count;
      EXPECT_EQ(op.device_option().device_type(), CPU) << op.DebugString();
      EXPECT_EQ(op.device_option().cuda_gpu_id(), device_id) << op.DebugString();
      for (const std::string& input : op.input()) {
        // Only the shared blobs keep their names.
        if (input != "ONE" && input != "lr") {
          EXPECT_EQ(input.compare(0, prefix.size(), prefix), 0) << input;
        }
      }
    }
    EXPECT_EQ(count, 4 + backward_ops + 4) << prefix;
  }

  std::vector<std::vector<std::string>> allreduces;
  for (const OperatorDef& op : net.op()) {
    if (op.type() != "Allreduce") continue;
    allreduces.push_back({op.input().begin(), op.input().end()});
    EXPECT_EQ(std::vector<std::string>(op.output().begin(), op.output().end()),
              allreduces.back());
  }
  // Reverse order of first use: the second layer's gradients first.
  ASSERT_EQ(allreduces.size(), 4u);
  EXPECT_TRUE((allreduces[0] == std::vector<std::string>{"cpu_0/w2_grad", "cpu_3/w2_grad"}) ||
              (allreduces[0] == std::vector<std::string>{"cpu_0/b2_grad", "cpu_3/b2_grad"}));
  EXPECT_TRUE((allreduces[3] == std::vector<std::string>{"cpu_0/w1_grad", "cpu_3/w1_grad"}) ||
              (allreduces[3] == std::vector<std::string>{"cpu_0/b1_grad", "cpu_3/b1_grad"}));

  for (const std::string& param : kParams) {
    const std::string grad = param + "_grad";
    const int allreduce = IndexOf(net, "Allreduce", "cpu_0/" + grad);
    int last_producer = -1;
    for (int i = 0; i < net.op_size(); ++i) {
      if (net.op(i).type() != "Allreduce" && net.op(i).type() != "WeightedSum" &&
          WritesUnder(net.op(i), "cpu_3/" + grad)) {
        last_producer = i;
      }
    }
    ASSERT_GE(last_producer, 0) << grad;
    EXPECT_GT(allreduce, last_producer) << grad;
    // Before any update reads the reduced gradient.
    EXPECT_LT(allreduce, IndexOf(net, "WeightedSum", "cpu_0/" + param)) << grad;
    EXPECT_EQ(result.device_param_to_grad.at(1).at("cpu_3/" + param), "cpu_3/" + grad);
  }
  EXPECT_EQ(net.type(), "dag");
  bool has_workers = false;
  for (const Argument& arg : net.arg()) {
    if (arg.name() == "num_workers") {
      has_workers = true;
      EXPECT_EQ(arg.i(), 1);  // workers per device (num_threads_per_device)
    }
  }
  EXPECT_TRUE(has_workers);
}

TEST(ParallelizeTest, InitNetBroadcastsDeviceZeroAndSharesOnce) {
  const Parallelized result = Parallelize(MlpTemplate(), TwoDevices());
  const NetDef& init = result.param_init_net;
  ASSERT_EQ(init.op_size(), 2 * 4 + 2 + 4);  // per-device fills, shared fills, broadcasts
  int shared_fills = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_NE(init.op(i).type(), "Broadcast");
    shared_fills += init.op(i).output(0) == "ONE" || init.op(i).output(0) == "lr";
  }
  EXPECT_EQ(shared_fills, 2);
  for (int i = 0; i < 4; ++i) {
    const OperatorDef& op = init.op(10 + i);
    EXPECT_EQ(op.type(), "Broadcast");
    EXPECT_EQ(op.input_size(), 2);
    EXPECT_EQ(op.input(0), "cpu_0/" + kParams[i]);
    EXPECT_EQ(op.input(1), "cpu_3/" + kParams[i]);
    ASSERT_EQ(op.arg_size(), 1);
    EXPECT_EQ(op.arg(0).name(), "root");
    EXPECT_EQ(op.arg(0).i(), 0);
  }
}

TEST(ParallelizeTest, OneDeviceHasNoCollectives) {
  ParallelizeOptions options = TwoDevices();
  options.devices = {2};
  options.net_type = "simple";
  const Parallelized result = Parallelize(MlpTemplate(), options);
  for (const NetDef* net : {&result.net, &result.param_init_net}) {
    for (const OperatorDef& op : net->op()) {
      EXPECT_NE(op.type(), "Allreduce");
      EXPECT_NE(op.type(), "Broadcast");
    }
  }
  EXPECT_EQ(result.net.type(), "simple");
  EXPECT_EQ(result.net.op(0).input(0), "cpu_2/data");
}

TEST(ParallelizeTest, TwoHalfBatchesTrainLikeOneWholeBatch) {
  std::vector<float> data(8 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::sin(0.7f * i);
  const std::vector<int32_t> labels = {0, 1, 2, 1, 0, 2, 2, 1};

  // Two devices; the loss is scaled by 1/2 as the caller must do.
  DataParallelTemplate model = MlpTemplate();
  *model.net.add_op() = MakeOp("Scale", {"avg_loss"}, {"scaled_loss"}, {FloatArg("scale", 0.5f)});
  model.losses = {"scaled_loss"};
  Workspace two;
  const Parallelized parallel = Parallelize(model, TwoDevices());
  two.RunNetOnce(parallel.param_init_net);
  for (const std::string& param : kParams) {
    EXPECT_EQ(Fetch(&two, "cpu_0/" + param), Fetch(&two, "cpu_3/" + param)) << param;
  }
  // The single-device run starts from the same values.
  Workspace one;
  for (const std::string& param : kParams) {
    ASSERT_TRUE(two.HasBlob("cpu_0/" + param)) << param;
    const Tensor& tensor = two.GetBlob("cpu_0/" + param)->GetTensor();
    FeedFloats(&one, param, tensor.dims(), Fetch(&two, "cpu_0/" + param));
  }
  FeedFloats(&one, "ONE", {1}, {1.0f});
  FeedFloats(&one, "lr", {1}, {-0.5f});
  const std::vector<float> initial_w1 = Fetch(&two, "cpu_0/w1");

  FeedFloats(&two, "cpu_0/data", {4, 4}, {data.begin(), data.begin() + 16});
  FeedFloats(&two, "cpu_3/data", {4, 4}, {data.begin() + 16, data.end()});
  FeedInts(&two, "cpu_0/label", {labels.begin(), labels.begin() + 4});
  FeedInts(&two, "cpu_3/label", {labels.begin() + 4, labels.end()});
  two.CreateNet(parallel.net);
  two.RunNet(parallel.net.name());

  const DataParallelTemplate single = MlpTemplate();
  NetDef whole = single.net;
  const BackwardResult backward = AddGradientOperators(whole, {"avg_loss"});
  for (const OperatorDef& op : backward.ops) *whole.add_op() = op;
  for (const OperatorDef& op : single.param_update_net.op()) *whole.add_op() = op;
  FeedFloats(&one, "data", {8, 4}, data);
  FeedInts(&one, "label", labels);
  one.RunNetOnce(whole);

  EXPECT_NE(Fetch(&two, "cpu_0/w1"), initial_w1);
  for (const std::string& param : kParams) {
    const std::vector<float> expected = Fetch(&one, param);
    const std::vector<float> device0 = Fetch(&two, "cpu_0/" + param);
    EXPECT_EQ(device0, Fetch(&two, "cpu_3/" + param)) << param;
    ASSERT_EQ(device0.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(device0[i], expected[i], 1e-5f) << param << "[" << i << "]";
    }
  }
}

TEST(ParallelizeTest, Errors) {
  ParallelizeOptions options = TwoDevices();
  options.devices = {};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(MlpTemplate(), options); }),
                     "device list is empty");
  options.devices = {1, 2, 1};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(MlpTemplate(), options); }),
                     "device 1 is listed twice");
  options = TwoDevices();
  options.device_type = 7;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(MlpTemplate(), options); }),
                     "device type 7 is not supported");
  options = TwoDevices();
  options.device_type = CUDA;
  options.shared_model = true;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(MlpTemplate(), options); }),
                     "shared_model is only supported on CPU devices");

  DataParallelTemplate model = MlpTemplate();
  model.losses = {"no_such_loss"};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(model, TwoDevices()); }),
                     "loss 'no_such_loss'", "net 'mlp'");
  model.losses = {};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(model, TwoDevices()); }),
                     "no losses");

  // An op writing a shared blob from per-device ones has no single placement.
  model = MlpTemplate();
  *model.param_update_net.add_op() = MakeOp("Scale", {"w1"}, {"lr"});
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(model, TwoDevices()); }),
                     "Scale", "shared blob 'lr'", "per-device blob 'w1'");

  // Gather's gradient on its table is a GradientSlice, concatenated over
  // the devices under a name the model must not use already (the sparse
  // path itself: sparse_data_parallel_test.py).
  DataParallelTemplate sparse;
  *sparse.param_init_net.add_op() =
      MakeOp("XavierFill", {}, {"table"}, {IntsArg("shape", {6, 2})});
  *sparse.net.add_op() = MakeOp("Gather", {"table", "ids"}, {"rows"});
  *sparse.net.add_op() = MakeOp("AveragedLoss", {"rows"}, {"loss"});
  *sparse.net.add_op() = MakeOp("Scale", {"loss"}, {"table_grad_values_all_devices"});
  sparse.losses = {"loss"};
  sparse.params = {"table"};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { Parallelize(sparse, TwoDevices()); }),
                     "'table_grad_values_all_devices' already exists", "parameter 'table'");
}

}  // namespace
}  // namespace doppio
