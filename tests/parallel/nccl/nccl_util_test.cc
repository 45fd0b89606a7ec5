// The NCCL ops' logic that needs no GPU: device lists and their errors, the
// communicator cache keyed by ordered device set, the unique-id exchange
// through a real file store handler between two threads, the
// DOPPIO_REQUIRE_GPU convention, and that the CUDA kernels are registered
// (creating one here fails naming the op, as there is no GPU).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_common.h"
#include "core/registry.h"
#include "core/workspace.h"
#include "parallel/gloo/gloo_common.h"
#include "parallel/nccl/nccl_util.h"
#include "tests/test_util.h"

namespace doppio {
namespace {

using testing::ErrorIfAny;
using testing::ErrorOf;
using testing::IntArg;
using testing::MakeOp;
using testing::StringArg;

bool FloatOnly(DataType dtype) { return dtype == DataType::kFloat; }

CollectiveInput OnGpu(const std::string& blob, int device) {
  return {blob, Device{DeviceKind::kCUDA, device}, DataType::kFloat, {2, 3}};
}

TEST(NcclDevicesTest, DevicesFollowInputOrder) {
  EXPECT_EQ(CollectiveDevices("op", {OnGpu("a", 2), OnGpu("b", 0), OnGpu("c", 1)}, FloatOnly),
            (std::vector<int>{2, 0, 1}));
}

TEST(NcclDevicesTest, RejectsBadInputsNamingOpAndBlob) {
  CollectiveInput cpu{"x_cpu", Device{DeviceKind::kCPU, 0}, DataType::kFloat, {2, 3}};
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CollectiveDevices("NCCLAllreduce", {OnGpu("a", 0), cpu},
                                                     FloatOnly); }),
                     "NCCLAllreduce", "'x_cpu'", "CPU");
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { CollectiveDevices("op", {OnGpu("a", 1), OnGpu("b", 1)}, FloatOnly); }),
      "'b'", "GPU 1", "own GPU");
  CollectiveInput wrong_shape = OnGpu("b", 1);
  wrong_shape.dims = {3, 2};
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { CollectiveDevices("op", {OnGpu("a", 0), wrong_shape}, FloatOnly); }),
      "'b'", "[3, 2]", "[2, 3]");
  CollectiveInput wrong_type = OnGpu("b", 1);
  wrong_type.dtype = DataType::kInt32;
  EXPECT_MESSAGE_HAS(
      ErrorOf([&] { CollectiveDevices("op", {OnGpu("a", 0), wrong_type}, FloatOnly); }),
      "'b'", "same type");
  CollectiveInput strings = OnGpu("s", 0);
  strings.dtype = DataType::kString;
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CollectiveDevices("op", {strings}, FloatOnly); }), "'s'",
                     "does not reduce");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CollectiveDevices("op", {}, FloatOnly); }), "at least one");
}

TEST(NcclDevicesTest, RootMustBeARank) {
  EXPECT_TRUE(ErrorIfAny([] { EnforceValidRoot("op", 2, 3); }).empty());
  EXPECT_MESSAGE_HAS(ErrorOf([] { EnforceValidRoot("NCCLReduce", 3, 3); }), "NCCLReduce",
                     "root 3", "not a device id");
  EXPECT_MESSAGE_HAS(ErrorOf([] { EnforceValidRoot("op", -1, 3); }), "root -1");
}

TEST(NcclCommCacheTest, OneEntryPerOrderedDeviceSet) {
  EXPECT_EQ(DeviceSetKey({0, 1, 3}), "0,1,3");
  EXPECT_NE(DeviceSetKey({1, 0}), DeviceSetKey({0, 1}));
  EXPECT_NE(DeviceSetKey({1, 2}), DeviceSetKey({12}));

  std::atomic<int> made{0};
  DeviceSetCache<std::vector<int>> cache([&](const std::vector<int>& devices) {
    ++made;
    return std::make_unique<std::vector<int>>(devices);
  });
  std::vector<int>* first = &cache.Get({0, 1});
  EXPECT_EQ(&cache.Get({0, 1}), first);
  EXPECT_EQ(made.load(), 1);
  // Another order is another communicator: ranks follow the order.
  EXPECT_EQ(cache.Get({1, 0}), (std::vector<int>{1, 0}));
  EXPECT_NE(&cache.Get({1, 0}), first);
  EXPECT_EQ(made.load(), 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(NcclCommCacheTest, ConcurrentFirstUseMakesOneAndFailuresRetry) {
  std::atomic<int> made{0};
  std::atomic<bool> fail{true};
  DeviceSetCache<int> cache([&](const std::vector<int>&) {
    if (fail.exchange(false)) DOPPIO_THROW("init failed");
    ++made;
    return std::make_unique<int>(7);
  });
  EXPECT_MESSAGE_HAS(ErrorOf([&] { cache.Get({0, 1, 2}); }), "init failed");
  EXPECT_EQ(cache.size(), 0u);
  std::vector<std::thread> threads;
  std::vector<int*> seen(8);
  for (int t = 0; t < 8; ++t) threads.emplace_back([&, t] { seen[t] = &cache.Get({0, 1, 2}); });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(made.load(), 1);
  for (int* entry : seen) EXPECT_EQ(entry, seen[0]);
}

// A GlooStoreHandler made by the real FileStoreHandlerCreate op.
const GlooStoreHandler& FileStore(Workspace* workspace, const std::string& dir) {
  OperatorDef create = MakeOp("FileStoreHandlerCreate", {}, {"store"}, {StringArg("path", dir)});
  CreateOperator(create, workspace)->Run();
  return workspace->GetBlob("store")->Get<GlooStoreHandler>();
}

std::vector<char> FakeId() {
  std::vector<char> id(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>((i * 37 + 11) % 251);
  return id;
}

TEST(NcclUniqueIdTest, RankZeroSetsOthersGetThroughAFileStore) {
  Workspace workspace;
  const GlooStoreHandler& handler = FileStore(&workspace, testing::TempDir("nccl_id_store"));
  std::atomic<int> generated{0};
  auto generate = [&] {
    ++generated;
    return FakeId();
  };
  std::vector<std::vector<char>> ids(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  // Later ranks start first, so they really wait for rank 0.
  for (int rank = 2; rank >= 0; --rank) {
    threads.emplace_back([&, rank] {
      errors[rank] = ErrorIfAny([&] {
        ids[rank] = ExchangeUniqueId("CreateNCCLCommunicator", handler.store(), "comm", rank, 3,
                                     128, generate, std::chrono::milliseconds(10000));
      });
    });
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(errors[rank], "") << rank;
    EXPECT_EQ(ids[rank], FakeId()) << rank;
  }
  EXPECT_EQ(generated.load(), 1);
}

TEST(NcclUniqueIdTest, ErrorsNameTheRankAndNeverHang) {
  Workspace workspace;
  const GlooStoreHandler& handler = FileStore(&workspace, testing::TempDir("nccl_id_errors"));
  auto never = []() -> std::vector<char> { ADD_FAILURE() << "only rank 0 generates"; return {}; };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ExchangeUniqueId("CreateNCCLCommunicator", handler.store(), "lonely", 1, 2,
                                        128, never, std::chrono::milliseconds(300));
                     }),
                     "CreateNCCLCommunicator", "rank 1 of 2", "nccl_unique_id/lonely");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ExchangeUniqueId("op", handler.store(), "x", 2, 2, 128, never,
                                        std::chrono::milliseconds(100));
                     }),
                     "rank 2", "[0, 2)");
  // Something else under the key (another job sharing the store and name).
  handler.store().set(NcclUniqueIdKey("clash"), std::vector<char>(5, 'x'));
  EXPECT_MESSAGE_HAS(ErrorOf([&] {
                       ExchangeUniqueId("op", handler.store(), "clash", 1, 2, 128, never,
                                        std::chrono::milliseconds(1000));
                     }),
                     "wrong size");
}

TEST(NcclEnvironmentTest, RequireGpuConvention) {
  const char* saved = std::getenv("DOPPIO_REQUIRE_GPU");
  const std::string saved_value = saved ? saved : "";
  for (const char* off : {"", "0", "false", "off"}) {
    ::setenv("DOPPIO_REQUIRE_GPU", off, 1);
    EXPECT_FALSE(GpuRequiredByEnvironment()) << off;
  }
  ::setenv("DOPPIO_REQUIRE_GPU", "1", 1);
  EXPECT_TRUE(GpuRequiredByEnvironment());
  ::unsetenv("DOPPIO_REQUIRE_GPU");
  EXPECT_FALSE(GpuRequiredByEnvironment());
  if (saved) ::setenv("DOPPIO_REQUIRE_GPU", saved_value.c_str(), 1);
}

TEST(NcclRegistrationTest, CudaKernelsRegisteredAndCpuRefused) {
  for (const char* type : {"NCCLAllreduce", "NCCLBroadcast", "NCCLReduce", "NCCLAllGather",
                           "NCCLReduceScatter", "CreateNCCLCommunicator"}) {
    EXPECT_NE(OperatorRegistry::Find({type, DeviceKind::kCUDA, ""}), nullptr) << type;
  }
  Workspace workspace;
  OperatorDef comm = MakeOp("CreateNCCLCommunicator", {"store"}, {"comm"},
                            {IntArg("size", 2), IntArg("rank", 0)});
  workspace.CreateBlob("store");
  EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(comm, &workspace); }), "CUDA devices only");
  if (!HasCudaGpu()) {
    OperatorDef op = MakeOp("NCCLAllreduce", {"a", "b"}, {"a", "b"}, {});
    op.mutable_device_option()->set_device_type(CUDA);
    workspace.CreateBlob("a");
    workspace.CreateBlob("b");
    // The kernel is found (else: "no CUDA implementation"); its context
    // then refuses the missing device.
    EXPECT_MESSAGE_HAS(ErrorOf([&] { CreateOperator(op, &workspace); }), "no CUDA device");
  }
}

}  // namespace
}  // namespace doppio
