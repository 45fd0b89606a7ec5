// The CUDA fallback (core/cuda/cuda_fallback_op.h): op types with a CPU
// kernel only still run under a CUDA device option, their outputs on the
// GPU and equal to the CPU's. Without a GPU the GPU cases skip (failing
// under DOPPIO_REQUIRE_GPU=1) and the op fails on the missing device, not on
// a missing kernel.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "tests/operators/cpu_vs_cuda_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using cpu_vs_cuda::ExpectCpuEqualsCuda;
using cpu_vs_cuda::Make;
using cpu_vs_cuda::Values;
using testing::ErrorOf;
using testing::FloatArg;
using testing::IntArg;
using testing::IntsArg;
using testing::MakeOp;
using testing::StringArg;

OperatorDef OnGpu(OperatorDef def) {
  def.mutable_device_option()->set_device_type(CUDA);
  return def;
}

TEST(CudaFallbackTest, ChosenOnlyWhereNoCudaKernelExists) {
  ASSERT_NE(OperatorRegistry::FindFallback(DeviceKind::kCUDA), nullptr);
  // The premise of the cases below: these types have CPU kernels only.
  for (const char* type : {"Transpose", "Reshape", "Cast", "LayerNorm", "Clip"}) {
    EXPECT_EQ(OperatorRegistry::Find({type, DeviceKind::kCUDA, ""}), nullptr) << type;
    EXPECT_NE(OperatorRegistry::Find({type, DeviceKind::kCPU, ""}), nullptr) << type;
  }
}

TEST(CudaFallbackTest, WithoutAGpuTheDeviceIsTheError) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  Workspace ws;
  ws.CreateBlob("X")->GetMutableTensor()->Resize({2, 3});
  const std::string message =
      ErrorOf([&] { ws.RunOperatorOnce(OnGpu(MakeOp("Transpose", {"X"}, {"Y"}))); });
  EXPECT_EQ(message.find("no CUDA implementation"), std::string::npos) << message;
  EXPECT_NE(message.find(CudaUnavailableReason()), std::string::npos) << message;
}

TEST(CudaFallbackTest, OutputsLiveOnTheGpuAndEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  ExpectCpuEqualsCuda(MakeOp("Transpose", {"X"}, {"Y"}, {IntsArg("axes", {2, 0, 1})}),
                      {Make<float>("X", {2, 3, 4}, Values<float>(24, 2.0, 1))}, 0);
  // Two outputs, one of them a shape; a reshape whose shape input stays on
  // the host (a CPU tensor among the inputs is copied on the host).
  ExpectCpuEqualsCuda(MakeOp("Reshape", {"X", "shape"}, {"Y", "old_shape"}),
                      {Make<double>("X", {4, 6}, Values<double>(24, 1.0, 2)),
                       Make<int64_t>("shape", {2}, {3, -1}, /*host_only=*/true)},
                      0);
  // A dtype that changes on the way.
  ExpectCpuEqualsCuda(MakeOp("Cast", {"X"}, {"Y"}, {IntArg("to", TensorProto::INT32)}),
                      {Make<float>("X", {5}, {-2.5f, -1.0f, 0.0f, 1.5f, 7.0f})}, 0);
}

TEST(CudaFallbackTest, InPlaceStaysInPlace) {
  SKIP_WITHOUT_GPU();
  ExpectCpuEqualsCuda(MakeOp("Clip", {"X"}, {"X"}, {FloatArg("min", -0.5f), FloatArg("max", 0.5f)}),
                      {Make<float>("X", {3, 2}, Values<float>(6, 1.0, 3))}, 0);
}

// The cuDNN ops hand the problems cuDNN cannot take to their CPU kernel:
// asymmetric pads, pooling of other than 2-D images, float64 NHWC.
TEST(CudaFallbackTest, CudnnOpsFallBackWhereCudnnCannot) {
  SKIP_WITHOUT_GPU();
  const auto x = Make<float>("X", {1, 2, 5, 5}, Values<float>(50, 1.0, 4));
  const auto w = Make<float>("W", {2, 3, 3, 3}, Values<float>(54, 0.5, 5));
  ExpectCpuEqualsCuda(
      MakeOp("Conv", {"X", "W"}, {"Y"}, {IntArg("kernel", 3), IntsArg("pads", {0, 1, 1, 0})}),
      {x, Make<float>("W", {3, 2, 3, 3}, Values<float>(54, 0.5, 5))}, 1e-5);
  ExpectCpuEqualsCuda(MakeOp("ConvTranspose", {"X", "W"}, {"Y"},
                             {IntArg("kernel", 3), IntsArg("pads", {0, 1, 1, 0})}),
                      {x, w}, 1e-5);
  ExpectCpuEqualsCuda(MakeOp("MaxPool", {"X"}, {"Y"}, {IntArg("kernel", 2)}),
                      {Make<float>("X", {2, 3, 8}, Values<float>(48, 1.0, 6))}, 0);
  ExpectCpuEqualsCuda(
      MakeOp("ConvTranspose", {"X", "W"}, {"Y"}, {IntArg("kernel", 1), StringArg("order", "NHWC")}),
      {Make<double>("X", {1, 3, 2}, Values<double>(6, 1.0, 7)),
       Make<double>("W", {2, 1, 4}, Values<double>(8, 1.0, 8))},
      1e-12);
}

TEST(CudaFallbackTest, ANonTensorInputIsNamed) {
  SKIP_WITHOUT_GPU();
  Workspace ws;
  *ws.CreateBlob("X")->GetMutable<std::string>() = "not a tensor";
  const std::string message =
      ErrorOf([&] { ws.RunOperatorOnce(OnGpu(MakeOp("Transpose", {"X"}, {"Y"}))); });
  EXPECT_MESSAGE_HAS(message, "'X'", "moves tensors only", "Transpose");
}

}  // namespace
}  // namespace doppio
