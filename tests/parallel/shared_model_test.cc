// ParallelizeOptions::shared_model: the structure of the nets (every device
// reads the master's params, one update per param, the master's params and
// momentum made once and never broadcast, per-device gradients allreduced),
// the errors, and a run: 3 momentum steps of two half batches on a shared
// model end equal to the replicated model and to one device on the whole
// batch, with no second copy of any param in the workspace.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/backward.h"
#include "core/workspace.h"
#include "parallel/data_parallel.h"
#include "tests/parallel/workspace_feed.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FeedFloats;
using testing::FeedInts;
using testing::Fetch;
using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

const std::vector<std::string> kParams = {"w1", "b1", "w2", "b2"};
const std::map<std::string, std::vector<int64_t>> kShapes = {
    {"w1", {5, 4}}, {"b1", {5}}, {"w2", {3, 5}}, {"b2", {3}}};

// data [N,4] -> FC(w1,b1) -> Relu -> FC(w2,b2) [N,3] -> SoftmaxWithLoss ->
// Scale(loss_scale); MomentumSGDUpdate with per-param momentum and a shared lr.
DataParallelTemplate MomentumMlp(float loss_scale) {
  DataParallelTemplate model;
  model.param_init_net.set_name("mlp_init");
  for (const std::string& param : kParams) {
    *model.param_init_net.add_op() =
        MakeOp("XavierFill", {}, {param}, {IntsArg("shape", kShapes.at(param))});
    // Shaped like its param, as Caffe2's optimizer makes it.
    *model.param_init_net.add_op() =
        MakeOp("ConstantFill", {param}, {param + "_momentum"}, {FloatArg("value", 0.0f)});
  }
  *model.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"lr"}, {IntsArg("shape", {1}), FloatArg("value", 0.1f)});

  model.net.set_name("mlp");
  *model.net.add_op() = MakeOp("FC", {"data", "w1", "b1"}, {"h"});
  *model.net.add_op() = MakeOp("Relu", {"h"}, {"h"});
  *model.net.add_op() = MakeOp("FC", {"h", "w2", "b2"}, {"logits"});
  *model.net.add_op() = MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"prob", "avg_loss"});
  *model.net.add_op() =
      MakeOp("Scale", {"avg_loss"}, {"scaled_loss"}, {FloatArg("scale", loss_scale)});
  model.losses = {"scaled_loss"};
  model.params = kParams;

  model.param_update_net.set_name("mlp_update");
  for (const std::string& param : kParams) {
    const std::string grad = param + "_grad";
    const std::string momentum = param + "_momentum";
    *model.param_update_net.add_op() =
        MakeOp("MomentumSGDUpdate", {grad, momentum, "lr", param}, {grad, momentum, param},
               {FloatArg("momentum", 0.9f)});
  }
  return model;
}

ParallelizeOptions SharedOn(const std::vector<int>& devices, bool shared_model = true) {
  ParallelizeOptions options;
  options.devices = devices;
  options.shared_blobs = {"lr"};
  options.shared_model = shared_model;
  return options;
}

bool StartsWith(const std::string& blob, const std::string& prefix) {
  return blob.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<std::string>& names) {
  return {names.begin(), names.end()};
}

TEST(SharedModelTest, NetsUseTheMastersParams) {
  const Parallelized result = Parallelize(MomentumMlp(0.5f), SharedOn({0, 3}));

  // No op anywhere makes or updates a second copy of a param or its momentum.
  for (const NetDef* net : {&result.param_init_net, &result.net}) {
    for (const OperatorDef& op : net->op()) {
      for (const std::string& output : op.output()) {
        for (const std::string& param : kParams) {
          EXPECT_NE(output, "cpu_3/" + param) << op.DebugString();
          EXPECT_NE(output, "cpu_3/" + param + "_momentum") << op.DebugString();
        }
      }
    }
  }

  // FC and FCGradient read (X, W, ...): both devices' W is cpu_0's.
  int fcs_on_device3 = 0;
  for (const OperatorDef& op : result.net.op()) {
    if (op.type() != "FC" && op.type() != "FCGradient") continue;
    ASSERT_GE(op.input_size(), 2);
    EXPECT_TRUE(op.input(1) == "cpu_0/w1" || op.input(1) == "cpu_0/w2") << op.DebugString();
    if (op.device_option().cuda_gpu_id() == 3) {
      ++fcs_on_device3;
      EXPECT_TRUE(StartsWith(op.input(0), "cpu_3/")) << op.DebugString();
    }
  }
  EXPECT_EQ(fcs_on_device3, 4);

  std::map<std::string, int> updates;
  std::vector<std::vector<std::string>> allreduces;
  for (const OperatorDef& op : result.net.op()) {
    if (op.type() == "MomentumSGDUpdate") {
      ++updates[op.input(3)];
      EXPECT_EQ(op.input(0), op.input(3) + "_grad");
      EXPECT_EQ(op.input(1), op.input(3) + "_momentum");
      EXPECT_EQ(op.device_option().cuda_gpu_id(), 0);
    }
    if (op.type() == "Allreduce") allreduces.push_back(Names(op.input()));
  }
  EXPECT_EQ(updates, (std::map<std::string, int>{
                         {"cpu_0/w1", 1}, {"cpu_0/b1", 1}, {"cpu_0/w2", 1}, {"cpu_0/b2", 1}}));
  std::sort(allreduces.begin(), allreduces.end());
  std::vector<std::vector<std::string>> expected_allreduces;
  for (const std::string& param : kParams) {
    expected_allreduces.push_back({"cpu_0/" + param + "_grad", "cpu_3/" + param + "_grad"});
  }
  std::sort(expected_allreduces.begin(), expected_allreduces.end());
  EXPECT_EQ(allreduces, expected_allreduces);

  int init_ops = 0;
  for (const OperatorDef& op : result.param_init_net.op()) {
    EXPECT_NE(op.type(), "Broadcast") << op.DebugString();
    ++init_ops;
  }
  EXPECT_EQ(init_ops, 2 * 4 + 1);  // each param and its momentum once, lr once

  ASSERT_EQ(result.device_param_to_grad.size(), 2u);
  EXPECT_EQ(result.device_param_to_grad[0].size(), 4u);
  EXPECT_EQ(result.device_param_to_grad[0].at("cpu_0/w2"), "cpu_0/w2_grad");
  EXPECT_TRUE(result.device_param_to_grad[1].empty());
}

TEST(SharedModelTest, ComputedParamsStayPerDeviceAndAreBroadcast) {
  DataParallelTemplate model = MomentumMlp(0.5f);
  // A blob the net updates itself (as batch norm does its running mean).
  *model.param_init_net.add_op() =
      MakeOp("ConstantFill", {}, {"steps"}, {IntsArg("shape", {1}), FloatArg("value", 0.0f)});
  *model.net.add_op() = MakeOp("Scale", {"steps"}, {"steps"}, {FloatArg("scale", 1.0f)});
  model.computed_params = {"steps"};
  const Parallelized result = Parallelize(model, SharedOn({0, 1}));
  std::vector<std::vector<std::string>> broadcasts;
  for (const OperatorDef& op : result.param_init_net.op()) {
    if (op.type() == "Broadcast") broadcasts.push_back(Names(op.input()));
  }
  EXPECT_EQ(broadcasts, (std::vector<std::vector<std::string>>{{"cpu_0/steps", "cpu_1/steps"}}));
}

TEST(SharedModelTest, Errors) {
  DataParallelTemplate writes_param = MomentumMlp(0.5f);
  // The forward scales w1 in place before reading it.
  NetDef forward = writes_param.net;
  forward.clear_op();
  *forward.add_op() = MakeOp("Scale", {"w1"}, {"w1"}, {FloatArg("scale", 1.0f)});
  for (const OperatorDef& op : writes_param.net.op()) *forward.add_op() = op;
  writes_param.net = forward;
  EXPECT_NE(ErrorOf([&] { Parallelize(writes_param, SharedOn({0, 1})); })
                .find("writes param 'w1'"),
            std::string::npos);
  // The same template is fine without sharing: each device scales its own.
  EXPECT_NO_THROW(Parallelize(writes_param, SharedOn({0, 1}, /*shared_model=*/false)));

  DataParallelTemplate mixed_init = MomentumMlp(0.5f);
  *mixed_init.param_init_net.add_op() = MakeOp("ConstantFill", {}, {"b2", "lr_scale"},
                                               {IntsArg("shape", {3})});
  *mixed_init.net.add_op() = MakeOp("Scale", {"lr_scale"}, {"unused"});
  EXPECT_NE(ErrorOf([&] { Parallelize(mixed_init, SharedOn({0, 1})); }).find("'lr_scale'"),
            std::string::npos);

  DataParallelTemplate both = MomentumMlp(0.5f);
  both.computed_params = {"b1"};
  EXPECT_NE(ErrorOf([&] { Parallelize(both, SharedOn({0, 1})); })
                .find("both as a param"),
            std::string::npos);

  ParallelizeOptions gpu = SharedOn({0, 1});
  gpu.device_type = CUDA;
  EXPECT_NE(ErrorOf([&] { Parallelize(MomentumMlp(0.5f), gpu); }).find("CPU"),
            std::string::npos);
}

std::vector<float> InitialValues(const std::string& param) {
  int64_t size = 1;
  for (int64_t dim : kShapes.at(param)) size *= dim;
  std::vector<float> values(size);
  const float phase = static_cast<float>(param[0] + param[1]);
  for (int64_t i = 0; i < size; ++i) values[i] = 0.5f * std::cos(0.9f * i + phase);
  return values;
}

const int kSteps = 3;

// Trains kSteps on `devices` (each fed its equal share of every batch of
// 8) and returns the master's params; `ws` keeps the blobs for inspection.
std::map<std::string, std::vector<float>> Train(const std::vector<int>& devices,
                                                bool shared_model, Workspace* ws) {
  const int num_devices = static_cast<int>(devices.size());
  const Parallelized result =
      Parallelize(MomentumMlp(1.0f / num_devices), SharedOn(devices, shared_model));
  ws->RunNetOnce(result.param_init_net);
  // Every existing copy starts from the same known values.
  for (const std::string& param : kParams) {
    for (int device : devices) {
      const std::string name = "cpu_" + std::to_string(device) + "/" + param;
      if (ws->HasBlob(name)) FeedFloats(ws, name, kShapes.at(param), InitialValues(param));
    }
  }
  const int rows = 8 / num_devices;
  for (int step = 0; step < kSteps; ++step) {
    for (int d = 0; d < num_devices; ++d) {
      const std::string prefix = "cpu_" + std::to_string(devices[d]) + "/";
      std::vector<float> data(rows * 4);
      std::vector<int32_t> labels(rows);
      for (int r = 0; r < rows; ++r) {
        const int row = d * rows + r;
        for (int c = 0; c < 4; ++c) data[r * 4 + c] = std::sin(0.7f * (row * 4 + c) + step);
        labels[r] = (row * 7 + step) % 3;
      }
      FeedFloats(ws, prefix + "data", {rows, 4}, data);
      FeedInts(ws, prefix + "label", labels);
    }
    if (step == 0) ws->CreateNet(result.net);  // once its inputs exist
    ws->RunNet(result.net.name());
  }
  std::map<std::string, std::vector<float>> params;
  const std::string master = "cpu_" + std::to_string(devices.front()) + "/";
  for (const std::string& param : kParams) params[param] = Fetch(ws, master + param);
  return params;
}

void ExpectClose(const std::map<std::string, std::vector<float>>& actual,
                 const std::map<std::string, std::vector<float>>& expected,
                 const std::string& what) {
  for (const std::string& param : kParams) {
    ASSERT_EQ(actual.at(param).size(), expected.at(param).size()) << what << " " << param;
    for (size_t i = 0; i < expected.at(param).size(); ++i) {
      EXPECT_NEAR(actual.at(param)[i], expected.at(param)[i], 1e-5f)
          << what << " " << param << "[" << i << "]";
    }
  }
}

TEST(SharedModelTest, TrainsLikeReplicasAndLikeOneDevice) {
  Workspace shared_ws;
  const auto shared = Train({0, 1}, /*shared_model=*/true, &shared_ws);
  for (const std::string& param : kParams) {
    EXPECT_FALSE(shared_ws.HasBlob("cpu_1/" + param)) << param;
    EXPECT_FALSE(shared_ws.HasBlob("cpu_1/" + param + "_momentum")) << param;
    EXPECT_TRUE(shared_ws.HasBlob("cpu_1/" + param + "_grad")) << param;
    EXPECT_NE(shared.at(param), InitialValues(param)) << param;  // it trained
  }
  Workspace replicated_ws;
  ExpectClose(shared, Train({0, 1}, /*shared_model=*/false, &replicated_ws), "replicated");
  Workspace one_ws;
  ExpectClose(shared, Train({0}, /*shared_model=*/false, &one_ws), "one device");
  Workspace four_ws;
  ExpectClose(Train({0, 1, 2, 3}, /*shared_model=*/true, &four_ws), shared, "four shared");
}

}  // namespace
}  // namespace doppio
