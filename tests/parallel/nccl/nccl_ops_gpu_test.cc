// The NCCL ops on real GPUs: every collective over all visible GPUs against
// sums written out here, and the multi-process mode (two ranks joined through
// a file store, run as two threads on two GPUs). Without a GPU each test
// skips with the reason; with DOPPIO_REQUIRE_GPU=1 (tools/gpu_selftest.sh)
// a missing GPU fails instead.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_common.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "parallel/nccl/nccl_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;

#define REQUIRE_GPUS(count)                                                             \
  do {                                                                                  \
    const int doppio_gpus = CudaDeviceCount();                                          \
    if (doppio_gpus < (count)) {                                                        \
      const std::string doppio_why = "needs " + std::to_string(count) + " GPU(s), has " + \
                                     std::to_string(doppio_gpus) + ": " +               \
                                     CudaUnavailableReason();                           \
      if (GpuRequiredByEnvironment() && doppio_gpus == 0) {                             \
        FAIL() << "DOPPIO_REQUIRE_GPU is set but " << doppio_why;                       \
      }                                                                                 \
      GTEST_SKIP() << doppio_why;                                                       \
    }                                                                                   \
  } while (0)

DeviceOption Gpu(int device) {
  DeviceOption option;
  option.set_device_type(CUDA);
  option.set_cuda_gpu_id(device);
  return option;
}

// Rank r's input: distinct per rank and element, exact in float.
std::vector<float> InputOf(int rank, int64_t numel) {
  std::vector<float> values(numel);
  for (int64_t i = 0; i < numel; ++i) values[i] = static_cast<float>(rank * 100 + i % 50 - 7);
  return values;
}

void Feed(Workspace* workspace, const std::string& name, int device,
          const std::vector<int64_t>& dims, const std::vector<float>& values) {
  CudaDeviceGuard guard(device);
  Tensor* tensor = workspace->CreateBlob(name)->GetMutableTensor(Device{DeviceKind::kCUDA, device});
  tensor->Resize(dims);
  DOPPIO_CUDA_CHECK(cudaMemcpy(tensor->mutable_data<float>(), values.data(),
                               values.size() * sizeof(float), cudaMemcpyHostToDevice));
}

std::vector<float> Fetch(const Workspace& workspace, const std::string& name, int expect_device) {
  const Tensor& tensor = workspace.GetBlob(name)->GetTensor();
  EXPECT_EQ(tensor.device().kind, DeviceKind::kCUDA) << name;
  EXPECT_EQ(tensor.device().id, expect_device) << name;
  std::vector<float> values(tensor.numel());
  CudaDeviceGuard guard(tensor.device().id);
  DOPPIO_CUDA_CHECK(cudaMemcpy(values.data(), tensor.data<float>(), values.size() * sizeof(float),
                               cudaMemcpyDeviceToHost));
  return values;
}

std::vector<std::string> Names(const std::string& stem, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(stem + std::to_string(i));
  return names;
}

// Runs `type` over every visible GPU in reverse order (so rank != device id)
// on inputs x0..x{n-1} with dims {n*2, 3}.
struct CollectiveRun {
  int ranks;
  std::vector<int> devices;
  Workspace workspace;
  const int64_t numel;
  CollectiveRun(const std::string& type, const std::vector<std::string>& outputs,
      std::vector<Argument> args = {})
      : ranks(CudaDeviceCount()), numel(ranks * 2 * 3) {
    for (int r = 0; r < ranks; ++r) devices.push_back(ranks - 1 - r);
    for (int r = 0; r < ranks; ++r) {
      Feed(&workspace, "x" + std::to_string(r), devices[r], {ranks * 2, 3}, InputOf(r, numel));
    }
    OperatorDef op = MakeOp(type, Names("x", ranks), outputs, args);
    *op.mutable_device_option() = Gpu(devices[0]);
    CreateOperator(op, &workspace)->Run();
  }
  std::vector<float> Sum() const {
    std::vector<float> sum(numel, 0.f);
    for (int r = 0; r < ranks; ++r) {
      const std::vector<float> x = InputOf(r, numel);
      for (int64_t i = 0; i < numel; ++i) sum[i] += x[i];
    }
    return sum;
  }
};

TEST(NcclOpsGpuTest, Allreduce) {
  REQUIRE_GPUS(1);
  CollectiveRun run("NCCLAllreduce", Names("x", CudaDeviceCount()));  // in place
  for (int r = 0; r < run.ranks; ++r) {
    EXPECT_EQ(Fetch(run.workspace, "x" + std::to_string(r), run.devices[r]), run.Sum()) << r;
  }
}

TEST(NcclOpsGpuTest, BroadcastFromRoot) {
  REQUIRE_GPUS(1);
  const int root = CudaDeviceCount() - 1;
  CollectiveRun run("NCCLBroadcast", Names("x", CudaDeviceCount()), {IntArg("root", root)});
  for (int r = 0; r < run.ranks; ++r) {
    EXPECT_EQ(Fetch(run.workspace, "x" + std::to_string(r), run.devices[r]),
              InputOf(root, run.numel));
  }
}

TEST(NcclOpsGpuTest, ReduceToRoot) {
  REQUIRE_GPUS(1);
  const int root = CudaDeviceCount() > 1 ? 1 : 0;
  CollectiveRun run("NCCLReduce", {"y"}, {IntArg("root", root)});
  EXPECT_EQ(Fetch(run.workspace, "y", run.devices[root]), run.Sum());
}

TEST(NcclOpsGpuTest, AllGather) {
  REQUIRE_GPUS(1);
  CollectiveRun run("NCCLAllGather", Names("y", CudaDeviceCount()));
  std::vector<float> gathered;
  for (int r = 0; r < run.ranks; ++r) {
    const std::vector<float> x = InputOf(r, run.numel);
    gathered.insert(gathered.end(), x.begin(), x.end());
  }
  for (int r = 0; r < run.ranks; ++r) {
    const std::string name = "y" + std::to_string(r);
    EXPECT_EQ(Fetch(run.workspace, name, run.devices[r]), gathered) << r;
    EXPECT_EQ(run.workspace.GetBlob(name)->GetTensor().dims(),
              (std::vector<int64_t>{run.ranks, static_cast<int64_t>(run.ranks) * 2, 3}));
  }
}

TEST(NcclOpsGpuTest, ReduceScatter) {
  REQUIRE_GPUS(1);
  CollectiveRun run("NCCLReduceScatter", Names("y", CudaDeviceCount()));
  const std::vector<float> sum = run.Sum();
  const int64_t block = run.numel / run.ranks;
  for (int r = 0; r < run.ranks; ++r) {
    const std::string name = "y" + std::to_string(r);
    EXPECT_EQ(Fetch(run.workspace, name, run.devices[r]),
              std::vector<float>(sum.begin() + r * block, sum.begin() + (r + 1) * block)) << r;
    EXPECT_EQ(run.workspace.GetBlob(name)->GetTensor().dims(), (std::vector<int64_t>{2, 3}));
  }
}

TEST(NcclOpsGpuTest, RejectsTwoInputsOnOneGpuAndBadRoot) {
  REQUIRE_GPUS(1);
  Workspace workspace;
  Feed(&workspace, "a", 0, {4}, InputOf(0, 4));
  Feed(&workspace, "b", 0, {4}, InputOf(1, 4));
  OperatorDef op = MakeOp("NCCLAllreduce", {"a", "b"}, {"a", "b"}, {});
  *op.mutable_device_option() = Gpu(0);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(op, &workspace)->Run(); }), "'b'", "own GPU");
  OperatorDef reduce = MakeOp("NCCLReduce", {"a"}, {"y"}, {IntArg("root", 1)});
  *reduce.mutable_device_option() = Gpu(0);
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(reduce, &workspace)->Run(); }), "root 1");
}

// Two ranks through a file store, as two processes would do it; threads so
// the test needs no launcher. NCCL requires a distinct GPU per rank.
TEST(NcclOpsGpuTest, TwoRanksThroughTheStore) {
  REQUIRE_GPUS(2);
  const std::string dir = testing::TempDir("nccl_two_ranks");
  std::vector<std::vector<float>> reduced(2), gathered(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      errors[rank] = ErrorIfAny([&] {
        Workspace workspace;
        CreateOperator(MakeOp("FileStoreHandlerCreate", {}, {"store"}, {StringArg("path", dir)}),
                       &workspace)->Run();
        OperatorDef comm = MakeOp("CreateNCCLCommunicator", {"store"}, {"comm"},
                                  {IntArg("size", 2), IntArg("rank", rank)});
        *comm.mutable_device_option() = Gpu(rank);
        CreateOperator(comm, &workspace)->Run();
        Feed(&workspace, "x", rank, {2, 3}, InputOf(rank, 6));
        OperatorDef allreduce = MakeOp("NCCLAllreduce", {"comm", "x"}, {"x"}, {});
        *allreduce.mutable_device_option() = Gpu(rank);
        CreateOperator(allreduce, &workspace)->Run();
        reduced[rank] = Fetch(workspace, "x", rank);
        OperatorDef gather = MakeOp("NCCLAllGather", {"comm", "x"}, {"g"}, {});
        *gather.mutable_device_option() = Gpu(rank);
        CreateOperator(gather, &workspace)->Run();
        gathered[rank] = Fetch(workspace, "g", rank);
      });
    });
  }
  for (std::thread& thread : ranks) thread.join();
  std::vector<float> sum(6);
  for (int i = 0; i < 6; ++i) sum[i] = InputOf(0, 6)[i] + InputOf(1, 6)[i];
  std::vector<float> both = sum;
  both.insert(both.end(), sum.begin(), sum.end());
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(errors[rank], "") << rank;
    EXPECT_EQ(reduced[rank], sum) << rank;
    EXPECT_EQ(gathered[rank], both) << rank;
  }
}

}  // namespace
}  // namespace doppio
