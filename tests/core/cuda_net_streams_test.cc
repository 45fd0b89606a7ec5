// The stream scheduling on a real GPU: CUDA events through CudaAsyncBackend,
// and nets of CUDA ops (with host readers of their results) under the
// simple and dag executors, against values computed here on the host. On a
// machine without a GPU every case skips with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/cuda/fill_kernel.h"
#include "core/net_dag.h"
#include "core/net_simple.h"
#include "core/workspace.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::FloatArg;
using testing::MakeOp;

#define SKIP_WITHOUT_GPU()                                           \
  do {                                                               \
    if (!HasCudaGpu()) {                                             \
      GTEST_SKIP() << "no CUDA device: " << CudaUnavailableReason(); \
    }                                                                \
  } while (0)

TEST(CudaAsyncBackendTest, DeviceWaitOrdersAnotherStreamAfterTheEvent) {
  SKIP_WITHOUT_GPU();
  const AsyncBackend* backend = CudaAsyncBackend();
  EXPECT_STREQ(backend->name(), "CUDA");
  const size_t count = size_t{1} << 26;  // 256 MB: the fill takes a while
  CudaDeviceGuard guard(0);
  float* data = nullptr;
  ASSERT_EQ(cudaMalloc(&data, count * sizeof(float)), cudaSuccess);
  std::vector<float> tail(1024, 0.0f);
  for (int round = 1; round <= 3; ++round) {
    LaunchFillFloat(data, count, static_cast<float>(round), CudaStreamFor(0, 0));
    std::unique_ptr<AsyncEvent> filled = backend->CreateEvent(0);
    filled->Record(0);
    filled->Block(0, 1);
    const cudaStream_t reader = CudaStreamFor(0, 1);
    ASSERT_EQ(cudaMemcpyAsync(tail.data(), data + count - tail.size(), tail.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, reader),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(reader), cudaSuccess);
    for (float value : tail) ASSERT_EQ(value, static_cast<float>(round)) << "round " << round;
    filled->Synchronize();
  }
  cudaFree(data);
}

OperatorDef OnGpu(OperatorDef op) {
  op.mutable_device_option()->set_device_type(static_cast<int>(DeviceKind::kCUDA));
  op.mutable_device_option()->set_cuda_gpu_id(0);
  return op;
}

// gx = x on the GPU; four branches a_k = (k+1) x * x + (k+1) x; their Sum
// comes back to the host, where a CPU op halves it. Then gx is doubled in
// place (after every branch has read it) and copied back too.
NetDef BranchyNet(const std::string& type, int workers) {
  NetDef net;
  net.set_name("cuda_" + type + std::to_string(workers));
  net.set_type(type);
  if (type == "dag") *net.add_arg() = testing::IntArg("num_workers", workers);
  auto add = [&](OperatorDef op) { *net.add_op() = std::move(op); };
  add(OnGpu(MakeOp("CopyCPUToGPU", {"x"}, {"gx"})));
  std::vector<std::string> branches;
  for (int k = 0; k < 4; ++k) {
    const std::string s = "s" + std::to_string(k);
    const std::string m = "m" + std::to_string(k);
    const std::string a = "a" + std::to_string(k);
    add(OnGpu(MakeOp("Scale", {"gx"}, {s}, {FloatArg("scale", k + 1.0f)})));
    add(OnGpu(MakeOp("Mul", {s, "gx"}, {m})));
    add(OnGpu(MakeOp("Add", {m, s}, {a})));
    branches.push_back(a);
  }
  add(OnGpu(MakeOp("Sum", branches, {"total"})));
  add(OnGpu(MakeOp("CopyGPUToCPU", {"total"}, {"total_cpu"})));
  add(MakeOp("Scale", {"total_cpu"}, {"out"}, {FloatArg("scale", 0.5f)}));
  add(OnGpu(MakeOp("Scale", {"gx"}, {"gx"}, {FloatArg("scale", 2.0f)})));
  add(OnGpu(MakeOp("CopyGPUToCPU", {"gx"}, {"gx_cpu"})));
  return net;
}

float XAt(int64_t i, int run) { return static_cast<float>((i + run) % 13 - 6) * 0.25f; }

TEST(CudaNetStreamsTest, SimpleAndDagMatchTheHostReference) {
  SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{1} << 24;
  struct Executor {
    const char* type;
    int workers;
  };
  for (const Executor executor :
       {Executor{"simple", 1}, Executor{"dag", 1}, Executor{"dag", 2}, Executor{"dag", 4}}) {
    Workspace ws;
    Tensor* x = ws.CreateBlob("x")->GetMutableTensor();
    x->Resize({n});
    x->mutable_data<float>();
    NetBase* net = ws.CreateNet(BranchyNet(executor.type, executor.workers));
    if (auto* simple = dynamic_cast<SimpleNet*>(net)) {
      EXPECT_NE(simple->stream_scheduler(), nullptr);
    }
    for (int run = 0; run < 3; ++run) {
      // New inputs every run: a read of the last run's values shows.
      float* values = ws.GetBlob("x")->GetMutableTensor()->mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) values[i] = XAt(i, run);
      net->Run();
      const float* out = ws.GetBlob("out")->GetTensor().data<float>();
      const float* doubled = ws.GetBlob("gx_cpu")->GetTensor().data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const float v = XAt(i, run);
        // 0.5 * sum over k of (k+1)(v*v + v) = 5 (v*v + v)
        const float expected = 5.0f * (v * v + v);
        ASSERT_NEAR(out[i], expected, 1e-4f * (1.0f + std::fabs(expected)))
            << executor.type << " x" << executor.workers << " run " << run << " at " << i;
        ASSERT_EQ(doubled[i], 2.0f * v)
            << executor.type << " x" << executor.workers << " run " << run << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace doppio
