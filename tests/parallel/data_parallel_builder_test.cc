// The C++ builder-callback front end (parallel/data_parallel_builder.h): an
// MLP written as callbacks trains data-parallel on two CPU devices, each
// fed half of every batch, to the same params as the same callbacks on one
// device fed whole batches, and both replicas end bitwise identical.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/workspace.h"
#include "parallel/data_parallel_builder.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorOf;
using testing::FloatArg;
using testing::FloatsArg;
using testing::IntsArg;
using testing::MakeOp;

constexpr int kIn = 4, kHidden = 6, kClasses = 3, kBatch = 8, kSteps = 10;
const std::vector<std::string> kParams = {"w1", "b1", "w2", "b2"};
const std::map<std::string, std::vector<int64_t>> kShapes = {
    {"w1", {kHidden, kIn}}, {"b1", {kHidden}}, {"w2", {kClasses, kHidden}}, {"b2", {kClasses}}};

// Deterministic, sign-varying values so both runs start identical without
// relying on the fillers' random streams.
std::vector<float> Pattern(int64_t size, float scale, int salt) {
  std::vector<float> values;
  for (int64_t i = 0; i < size; ++i) {
    values.push_back(scale * std::sin(0.7f * static_cast<float>(i + 1) + static_cast<float>(salt)));
  }
  return values;
}

int64_t SizeOf(const std::vector<int64_t>& shape) {
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  return size;
}

ModelBuilders MlpBuilders() {
  ModelBuilders builders;
  builders.forward = [](NetDef* init, NetDef* net, float loss_scale) {
    int salt = 0;
    for (const std::string& param : kParams) {
      const std::vector<int64_t>& shape = kShapes.at(param);
      *init->add_op() = MakeOp("GivenTensorFill", {}, {param},
                               {IntsArg("shape", shape),
                                FloatsArg("values", Pattern(SizeOf(shape), 0.5f, salt++))});
    }
    *net->add_op() = MakeOp("FC", {"data", "w1", "b1"}, {"hidden"});
    *net->add_op() = MakeOp("Relu", {"hidden"}, {"hidden"});
    *net->add_op() = MakeOp("FC", {"hidden", "w2", "b2"}, {"logits"});
    *net->add_op() = MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"prob", "avg_loss"});
    *net->add_op() =
        MakeOp("Scale", {"avg_loss"}, {"scaled_loss"}, {FloatArg("scale", loss_scale)});
    return std::vector<std::string>{"scaled_loss"};
  };
  // Weights: MomentumSGDUpdate (lr > 0 is subtracted); biases: plain SGD
  // as WeightedSum(param * 1 + grad * (-lr)).
  builders.param_update = [](NetDef* init, NetDef* update,
                             const std::map<std::string, std::string>& param_to_grad) {
    *init->add_op() = MakeOp("ConstantFill", {}, {"lr"},
                             {IntsArg("shape", {1}), FloatArg("value", 0.1f)});
    *init->add_op() = MakeOp("ConstantFill", {}, {"neg_lr"},
                             {IntsArg("shape", {1}), FloatArg("value", -0.1f)});
    *init->add_op() = MakeOp("ConstantFill", {}, {"ONE"},
                             {IntsArg("shape", {1}), FloatArg("value", 1.0f)});
    for (const auto& entry : param_to_grad) {
      const std::string& param = entry.first;
      const std::string& grad = entry.second;
      if (param[0] == 'w') {
        const std::string momentum = param + "_momentum";
        *init->add_op() = MakeOp("ConstantFill", {}, {momentum},
                                 {IntsArg("shape", kShapes.at(param)), FloatArg("value", 0.0f)});
        *update->add_op() = MakeOp("MomentumSGDUpdate", {grad, momentum, "lr", param},
                                   {grad, momentum, param}, {FloatArg("momentum", 0.9f)});
      } else {
        *update->add_op() = MakeOp("WeightedSum", {param, "ONE", grad, "neg_lr"}, {param});
      }
    }
  };
  return builders;
}

ParallelizeOptions OnDevices(std::vector<int> devices) {
  ParallelizeOptions options;
  options.devices = std::move(devices);
  return options;
}

void Feed(Workspace* workspace, const std::string& name, const std::vector<int64_t>& shape,
          const std::vector<float>& values) {
  Tensor* tensor = workspace->CreateBlob(name)->GetMutableTensor();
  tensor->Resize(shape);
  float* data = tensor->mutable_data<float>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
}

void FeedLabels(Workspace* workspace, const std::string& name, const std::vector<int>& labels) {
  Tensor* tensor = workspace->CreateBlob(name)->GetMutableTensor();
  tensor->Resize({static_cast<int64_t>(labels.size())});
  int32_t* data = tensor->mutable_data<int32_t>();
  for (size_t i = 0; i < labels.size(); ++i) data[i] = labels[i];
}

std::vector<float> Values(const Workspace& workspace, const std::string& name) {
  const Blob* blob = workspace.GetBlob(name);
  EXPECT_NE(blob, nullptr) << name;
  if (blob == nullptr) return {};
  const Tensor& tensor = blob->Get<Tensor>();
  const float* data = tensor.data<float>();
  return std::vector<float>(data, data + tensor.numel());
}

// Trains on `num_devices`, device d fed rows [d * n, (d + 1) * n) of each
// batch; returns every device's params, keyed "cpu_<d>/<param>".
std::map<std::string, std::vector<float>> Train(int num_devices) {
  std::vector<int> devices;
  for (int d = 0; d < num_devices; ++d) devices.push_back(d);
  const Parallelized model = BuildDataParallel(MlpBuilders(), OnDevices(devices));
  Workspace workspace;
  RunInitNet(&workspace, model);
  const int rows = kBatch / num_devices;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> data = Pattern(kBatch * kIn, 1.0f, 100 + step);
    for (int d = 0; d < num_devices; ++d) {
      Feed(&workspace, "cpu_" + std::to_string(d) + "/data", {rows, kIn},
           std::vector<float>(data.begin() + d * rows * kIn, data.begin() + (d + 1) * rows * kIn));
      std::vector<int> labels;
      for (int r = d * rows; r < (d + 1) * rows; ++r) labels.push_back((r * 7 + step) % kClasses);
      FeedLabels(&workspace, "cpu_" + std::to_string(d) + "/label", labels);
    }
    RunNet(&workspace, model);
  }
  std::map<std::string, std::vector<float>> params;
  for (int d = 0; d < num_devices; ++d) {
    for (const std::string& param : kParams) {
      const std::string name = "cpu_" + std::to_string(d) + "/" + param;
      params[name] = Values(workspace, name);
    }
  }
  return params;
}

TEST(DataParallelBuilder, TwoDevicesMatchOneDeviceWithTheWholeBatch) {
  const auto one = Train(1);
  const auto two = Train(2);
  for (const std::string& param : kParams) {
    const std::vector<float>& reference = one.at("cpu_0/" + param);
    const std::vector<float>& device0 = two.at("cpu_0/" + param);
    const std::vector<float>& device1 = two.at("cpu_1/" + param);
    ASSERT_EQ(reference.size(), static_cast<size_t>(SizeOf(kShapes.at(param)))) << param;
    ASSERT_EQ(device0.size(), reference.size()) << param;
    const std::vector<float> initial =
        Pattern(SizeOf(kShapes.at(param)), 0.5f,
                static_cast<int>(std::find(kParams.begin(), kParams.end(), param) -
                                 kParams.begin()));
    float moved = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      moved = std::max(moved, std::fabs(reference[i] - initial[i]));
      EXPECT_NEAR(device0[i], reference[i], 1e-5f) << param << "[" << i << "]";
      // The replicas apply the same reduced gradients: bitwise equal.
      EXPECT_EQ(device1[i], device0[i]) << param << "[" << i << "]";
    }
    EXPECT_GT(moved, 1e-3f) << param << " did not train";
  }
}

TEST(DataParallelBuilder, DiscoversParamsAndBuildsOneAllreducePerGradient) {
  const Parallelized model = BuildDataParallel(MlpBuilders(), OnDevices({0, 1}));
  std::vector<std::string> discovered;
  for (const auto& entry : model.param_to_grad) discovered.push_back(entry.first);
  std::vector<std::string> expected = kParams;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(discovered, expected);  // not lr, ONE or the momenta
  int allreduces = 0, broadcasts = 0;
  for (const OperatorDef& op : model.net.op()) allreduces += op.type() == "Allreduce";
  for (const OperatorDef& op : model.param_init_net.op()) broadcasts += op.type() == "Broadcast";
  EXPECT_EQ(allreduces, 4);
  EXPECT_EQ(broadcasts, 4);
}

TEST(DataParallelBuilder, Errors) {
  ModelBuilders none;
  EXPECT_NE(ErrorOf([&] { BuildDataParallel(none, OnDevices({0})); })
                .find("forward is required"),
            std::string::npos);
  ModelBuilders no_loss = MlpBuilders();
  no_loss.forward = [](NetDef*, NetDef* net, float) {
    *net->add_op() = MakeOp("Relu", {"data"}, {"out"});
    return std::vector<std::string>{};
  };
  EXPECT_NE(ErrorOf([&] { BuildDataParallel(no_loss, OnDevices({0, 1})); }).find("no losses"),
            std::string::npos);

  const Parallelized model = BuildDataParallel(MlpBuilders(), OnDevices({0, 1}));
  Workspace workspace;
  EXPECT_NE(ErrorOf([&] { RunNet(&workspace, model); }).find("call RunInitNet first"),
            std::string::npos);
  // Data never fed: the error names the op, not a crash.
  RunInitNet(&workspace, model);
  EXPECT_FALSE(ErrorOf([&] { RunNet(&workspace, model); }).empty());
}

}  // namespace
}  // namespace doppio
