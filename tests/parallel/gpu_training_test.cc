// The MLP of the data-parallel tests trained by Parallelize on CUDA device 0
// (and on devices 0 and 1, Copy + Sum tree, when two GPUs are attached)
// ends with the params the same model reaches on the CPU: every op of a GPU
// training step (FC, Relu, SoftmaxWithLoss, Scale, their gradients, Sum,
// WeightedSum and MomentumSGDUpdate reading a learning rate shared on the
// host, as build_sgd places it) runs with a CUDA kernel and computes what
// the CPU ops compute.
//
// Without a GPU the test skips with the reason; with DOPPIO_REQUIRE_GPU=1
// (tools/gpu_selftest.sh) it fails instead.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_common.h"
#include "core/workspace.h"
#include "parallel/data_parallel_builder.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::IntsArg;
using testing::MakeOp;

constexpr int kIn = 5, kHidden = 7, kClasses = 3, kBatch = 8, kSteps = 6;
const std::vector<std::string> kParams = {"w1", "b1", "w2", "b2"};
const std::map<std::string, std::vector<int64_t>> kShapes = {
    {"w1", {kHidden, kIn}}, {"b1", {kHidden}}, {"w2", {kClasses, kHidden}}, {"b2", {kClasses}}};

bool GpuRequired() {
  const char* value = std::getenv("DOPPIO_REQUIRE_GPU");
  if (value == nullptr) return false;
  const std::string v = value;
  return !(v.empty() || v == "0" || v == "false" || v == "off");
}

int64_t SizeOf(const std::vector<int64_t>& shape) {
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  return size;
}

std::vector<float> Pattern(int64_t size, float scale, int salt) {
  std::vector<float> values(size);
  for (int64_t i = 0; i < size; ++i) {
    values[i] = scale * std::sin(0.7f * static_cast<float>(i + 1) + static_cast<float>(salt));
  }
  return values;
}

DeviceOption HostOption() {
  DeviceOption option;
  option.set_device_type(CPU);
  return option;
}

// The params start as zeros (ConstantFill has kernels on both devices) and
// are overwritten with Pattern values after the init net, identically on
// every device. Weights: MomentumSGDUpdate; biases: WeightedSum (build_sgd
// without momentum). Both read their learning rate from the host.
ModelBuilders MlpBuilders() {
  ModelBuilders builders;
  builders.forward = [](NetDef* init, NetDef* net, float loss_scale) {
    for (const std::string& param : kParams) {
      *init->add_op() = MakeOp("ConstantFill", {}, {param},
                               {IntsArg("shape", kShapes.at(param)), FloatArg("value", 0.0f)});
    }
    *net->add_op() = MakeOp("FC", {"data", "w1", "b1"}, {"hidden"});
    *net->add_op() = MakeOp("Relu", {"hidden"}, {"hidden"});
    *net->add_op() = MakeOp("FC", {"hidden", "w2", "b2"}, {"logits"});
    *net->add_op() = MakeOp("SoftmaxWithLoss", {"logits", "label"}, {"prob", "avg_loss"});
    *net->add_op() =
        MakeOp("Scale", {"avg_loss"}, {"scaled_loss"}, {FloatArg("scale", loss_scale)});
    return std::vector<std::string>{"scaled_loss"};
  };
  builders.param_update = [](NetDef* init, NetDef* update,
                             const std::map<std::string, std::string>& param_to_grad) {
    OperatorDef lr = MakeOp("ConstantFill", {}, {"lr"},
                            {IntsArg("shape", {1}), FloatArg("value", 0.1f)});
    *lr.mutable_device_option() = HostOption();
    *init->add_op() = lr;
    OperatorDef neg_lr = MakeOp("ConstantFill", {}, {"neg_lr"},
                                {IntsArg("shape", {1}), FloatArg("value", -0.1f)});
    *neg_lr.mutable_device_option() = HostOption();
    *init->add_op() = neg_lr;
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

// Writes host values into blob `name`, a tensor on `device` of that shape
// (created when missing).
template <typename T>
void Write(Workspace* ws, const std::string& name, Device device,
           const std::vector<int64_t>& shape, const std::vector<T>& values) {
  Blob* blob = ws->HasBlob(name) ? ws->GetBlob(name) : ws->CreateBlob(name);
  Tensor* tensor = blob->GetMutableTensor(device);
  tensor->Resize(shape);
  T* data = tensor->mutable_data<T>();
  if (device.kind == DeviceKind::kCUDA) {
    DOPPIO_CUDA_CHECK(cudaDeviceSynchronize());
    DOPPIO_CUDA_CHECK(
        cudaMemcpy(data, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
  } else {
    std::copy(values.begin(), values.end(), data);
  }
}

std::vector<float> Read(const Workspace& ws, const std::string& name) {
  const Tensor& tensor = ws.GetBlob(name)->GetTensor();
  std::vector<float> values(tensor.numel());
  if (tensor.device().kind == DeviceKind::kCUDA) {
    DOPPIO_CUDA_CHECK(cudaDeviceSynchronize());
    DOPPIO_CUDA_CHECK(cudaMemcpy(values.data(), tensor.data<float>(),
                                 values.size() * sizeof(float), cudaMemcpyDeviceToHost));
  } else {
    std::copy(tensor.data<float>(), tensor.data<float>() + values.size(), values.begin());
  }
  return values;
}

// Trains on `devices` of `device_type`, device d fed its rows of each batch;
// returns every device's params by their prefixed names.
std::map<std::string, std::vector<float>> Train(int device_type, const std::vector<int>& devices) {
  ParallelizeOptions options;
  options.devices = devices;
  options.device_type = device_type;
  options.shared_blobs = {"lr", "neg_lr"};
  const Parallelized model = BuildDataParallel(MlpBuilders(), options);
  for (const NetDef* net : {&model.param_init_net, &model.net}) {
    for (const OperatorDef& op : net->op()) {
      const bool shared_lr = op.output_size() == 1 && (op.output(0) == "lr" ||
                                                        op.output(0) == "neg_lr");
      EXPECT_EQ(op.device_option().device_type(), shared_lr ? CPU : device_type) << op.type();
    }
  }
  Workspace workspace;
  RunInitNet(&workspace, model);
  const int count = static_cast<int>(devices.size());
  const int rows = kBatch / count;
  auto prefix = [&](int d) { return DevicePrefix(device_type, devices[d]); };
  auto device = [&](int d) {
    return device_type == CUDA ? Device{DeviceKind::kCUDA, devices[d]} : Device{};
  };
  for (int d = 0; d < count; ++d) {
    int salt = 0;
    for (const std::string& param : kParams) {
      const std::vector<int64_t>& shape = kShapes.at(param);
      Write(&workspace, prefix(d) + param, device(d), shape, Pattern(SizeOf(shape), 0.5f, salt++));
    }
  }
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<float> data = Pattern(kBatch * kIn, 1.0f, 100 + step);
    for (int d = 0; d < count; ++d) {
      Write(&workspace, prefix(d) + "data", device(d), {rows, kIn},
            std::vector<float>(data.begin() + d * rows * kIn,
                               data.begin() + (d + 1) * rows * kIn));
      std::vector<int32_t> labels;
      for (int r = d * rows; r < (d + 1) * rows; ++r) labels.push_back((r * 7 + step) % kClasses);
      Write(&workspace, prefix(d) + "label", device(d), {rows}, labels);
    }
    RunNet(&workspace, model);
  }
  std::map<std::string, std::vector<float>> params;
  for (int d = 0; d < count; ++d) {
    for (const std::string& param : kParams) {
      params[prefix(d) + param] = Read(workspace, prefix(d) + param);
    }
  }
  return params;
}

void ExpectGpuMatchesCpu(const std::vector<int>& gpus) {
  const auto cpu = Train(CPU, {0});
  const auto gpu = Train(CUDA, gpus);
  int salt = 0;
  for (const std::string& param : kParams) {
    const std::vector<float>& reference = cpu.at("cpu_0/" + param);
    const std::vector<float> initial = Pattern(SizeOf(kShapes.at(param)), 0.5f, salt++);
    float moved = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      moved = std::max(moved, std::fabs(reference[i] - initial[i]));
    }
    EXPECT_GT(moved, 1e-3f) << param << " did not train";
    for (int d : gpus) {
      const std::string name = "gpu_" + std::to_string(d) + "/" + param;
      const std::vector<float>& got = gpu.at(name);
      ASSERT_EQ(got.size(), reference.size()) << name;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], reference[i], 1e-4f * std::max(1.0f, std::fabs(reference[i])))
            << name << "[" << i << "]";
      }
    }
  }
}

bool HaveGpus(int count, std::string* why) {
  const int available = CudaDeviceCount();
  if (available >= count) return true;
  *why = available == 0 ? "no CUDA GPU: " + CudaUnavailableReason()
                        : "needs " + std::to_string(count) + " GPUs, " +
                              std::to_string(available) + " attached";
  return false;
}

TEST(GpuTraining, OneGpuMatchesTheCpu) {
  std::string why;
  if (!HaveGpus(1, &why)) {
    if (GpuRequired()) FAIL() << "DOPPIO_REQUIRE_GPU is set but " << why;
    GTEST_SKIP() << why;
  }
  ExpectGpuMatchesCpu({0});
}

TEST(GpuTraining, TwoGpusWithCopySumTreesMatchTheCpu) {
  std::string why;
  // "a GPU" is what DOPPIO_REQUIRE_GPU asks for, not two.
  if (!HaveGpus(2, &why)) GTEST_SKIP() << why;
  ExpectGpuMatchesCpu({0, 1});
}

}  // namespace
}  // namespace doppio
