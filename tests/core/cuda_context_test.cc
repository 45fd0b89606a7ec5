// CUDAContext, the device utilities and the registered CUDA allocator. On a
// machine without a GPU the GPU cases skip with the reason (a skip is never
// a pass); the no-GPU cases check that everything fails cleanly instead.
#include "core/cuda/cuda_context.h"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/cuda/cuda_allocator.h"
#include "core/cuda/cuda_common.h"
#include "core/cuda/fill_kernel.h"
#include "core/enforce.h"

namespace doppio {
namespace {

// Set (tools/gpu_selftest.sh) where a GPU is expected: a missing GPU is then
// a failure, not a skip.
bool GpuRequired() {
  const char* value = std::getenv("DOPPIO_REQUIRE_GPU");
  if (value == nullptr) return false;
  const std::string v = value;
  return !(v.empty() || v == "0" || v == "false" || v == "off");
}

// A macro: GTEST_SKIP returns from the test body that invokes it.
#define SKIP_WITHOUT_GPU()                                                       \
  do {                                                                           \
    if (!HasCudaGpu()) {                                                         \
      if (GpuRequired()) {                                                       \
        FAIL() << "DOPPIO_REQUIRE_GPU is set but " << CudaUnavailableReason();   \
      }                                                                          \
      GTEST_SKIP() << "no CUDA device: " << CudaUnavailableReason();             \
    }                                                                            \
  } while (0)

DeviceOption GpuOption(int gpu_id) {
  DeviceOption option;
  option.set_device_type(static_cast<int>(DeviceKind::kCUDA));
  option.set_cuda_gpu_id(gpu_id);
  return option;
}

std::string MessageOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(CudaWithoutGpuTest, EverythingFailsCleanlyWithTheReason) {
  if (HasCudaGpu()) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(CudaDeviceCount(), 0);
  const std::string reason = CudaUnavailableReason();
  EXPECT_FALSE(reason.empty());

  const std::string context_error = MessageOf([] { CUDAContext context(GpuOption(0)); });
  EXPECT_NE(context_error.find("no CUDA device"), std::string::npos) << context_error;
  EXPECT_NE(context_error.find(reason), std::string::npos) << context_error;

  // Linking //core/cuda registers the CUDA allocator; without a GPU it
  // explains itself instead of crashing.
  Allocator* allocator = GetAllocator(DeviceKind::kCUDA);
  EXPECT_EQ(allocator, GetCUDAAllocator());
  EXPECT_EQ(allocator->Allocate(0), nullptr);
  const std::string allocate_error = MessageOf([&] { allocator->Allocate(64); });
  EXPECT_NE(allocate_error.find("64 bytes"), std::string::npos) << allocate_error;
  EXPECT_NE(allocate_error.find(reason), std::string::npos) << allocate_error;
  EXPECT_THROW(GetPinnedHostAllocator()->Allocate(64), Error);
  EXPECT_THROW(CudaDeviceGuard guard(0), Error);
}

TEST(CudaAllocatorSettingTest, EnvironmentTurnsCachingOff) {
  const char* saved = std::getenv("DOPPIO_CUDA_CACHING_ALLOCATOR");
  const std::string saved_value = saved ? saved : "";
  unsetenv("DOPPIO_CUDA_CACHING_ALLOCATOR");
  EXPECT_TRUE(CUDACachingEnabledByEnvironment());
  setenv("DOPPIO_CUDA_CACHING_ALLOCATOR", "0", 1);
  EXPECT_FALSE(CUDACachingEnabledByEnvironment());
  setenv("DOPPIO_CUDA_CACHING_ALLOCATOR", "1", 1);
  EXPECT_TRUE(CUDACachingEnabledByEnvironment());
  if (saved) {
    setenv("DOPPIO_CUDA_CACHING_ALLOCATOR", saved_value.c_str(), 1);
  } else {
    unsetenv("DOPPIO_CUDA_CACHING_ALLOCATOR");
  }
}

TEST(CudaDeviceTest, PropertiesAndGuard) {
  SKIP_WITHOUT_GPU();
  const CudaDeviceProperties& properties = GetCudaDeviceProperties(0);
  EXPECT_FALSE(properties.name.empty());
  EXPECT_GT(properties.total_memory_bytes, 0u);
  EXPECT_GT(properties.multiprocessor_count, 0);
  EXPECT_GE(properties.compute_capability_major, 9);  // built for sm_90+
  EXPECT_THROW(GetCudaDeviceProperties(CudaDeviceCount()), Error);

  const int last = CudaDeviceCount() - 1;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  {
    CudaDeviceGuard guard(last);
    EXPECT_EQ(CurrentCudaDevice(), last);
  }
  EXPECT_EQ(CurrentCudaDevice(), 0);
}

TEST(CUDAContextTest, OneStreamPerWorkerWithItsOwnHandles) {
  SKIP_WITHOUT_GPU();
  CUDAContext context(GpuOption(0));
  EXPECT_EQ(context.device(), (Device{DeviceKind::kCUDA, 0}));
  context.SwitchToDevice(0);
  const cudaStream_t stream0 = context.cuda_stream();
  const cublasHandle_t cublas0 = context.cublas_handle();
  const cudnnHandle_t cudnn0 = context.cudnn_handle();
  EXPECT_EQ(CurrentCUDAStream(0), stream0);

  context.SwitchToDevice(1);
  const cudaStream_t stream1 = context.cuda_stream();
  EXPECT_NE(stream1, stream0);
  EXPECT_NE(stream1, nullptr);
  EXPECT_EQ(CurrentCUDAStream(0), stream1);
  EXPECT_NE(context.cublas_handle(), cublas0);
  EXPECT_NE(context.cudnn_handle(), cudnn0);

  // Another op's context on the same worker shares the stream and handles.
  CUDAContext other(GpuOption(0));
  other.SwitchToDevice(0);
  EXPECT_EQ(other.cuda_stream(), stream0);
  EXPECT_EQ(other.cublas_handle(), cublas0);
  EXPECT_EQ(other.cudnn_handle(), cudnn0);

  cudaStream_t bound = nullptr;
  ASSERT_EQ(cublasGetStream(cublas0, &bound), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(bound, stream0);
  ASSERT_EQ(cudnnGetStream(cudnn0, &bound), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bound, stream0);
  EXPECT_THROW(CUDAContext(GpuOption(CudaDeviceCount())), Error);
}

TEST(CUDAContextTest, CopyRoundTripThroughPinnedMemoryAndAKernel) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kCount = 1000;
  constexpr size_t kBytes = kCount * sizeof(float);
  CUDAContext context(GpuOption(0));
  context.SwitchToDevice(0);
  Allocator* pinned = GetPinnedHostAllocator();
  auto* host_in = static_cast<float*>(pinned->Allocate(kBytes));
  auto* host_out = static_cast<float*>(pinned->Allocate(kBytes));
  for (size_t i = 0; i < kCount; ++i) host_in[i] = 0.5f * static_cast<float>(i) - 3.0f;
  void* device = GetAllocator(DeviceKind::kCUDA)->Allocate(kBytes);

  context.CopyBytes(kBytes, host_in, device);
  context.CopyBytes(kBytes, device, host_out);
  context.FinishDeviceComputation();
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(host_out[i], 0.5f * static_cast<float>(i) - 3.0f) << i;
  }

  LaunchFillFloat(static_cast<float*>(device), kCount, 3.25f, context.cuda_stream());
  context.CopyBytes(kBytes, device, host_out);
  context.FinishDeviceComputation();
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(host_out[i], 3.25f) << i;

  GetAllocator(DeviceKind::kCUDA)->Free(device);
  pinned->Free(host_in);
  pinned->Free(host_out);
}

TEST(CUDAContextTest, EventOrdersWorkAcrossStreams) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kCount = size_t{1} << 22;  // long enough to still be queued
  CUDAContext producer(GpuOption(0));
  CUDAContext consumer(GpuOption(0));
  producer.SwitchToDevice(0);
  consumer.SwitchToDevice(1);
  float* data = nullptr;
  ASSERT_EQ(cudaMalloc(&data, kCount * sizeof(float)), cudaSuccess);
  std::vector<float> host(kCount, 0.0f);

  LaunchFillFloat(data, kCount, 7.0f, producer.cuda_stream());
  CUDAEvent produced(0);
  producer.RecordEvent(produced);
  consumer.WaitEvent(produced);
  consumer.CopyBytes(kCount * sizeof(float), data, host.data());
  consumer.FinishDeviceComputation();
  EXPECT_TRUE(produced.Query());
  for (size_t i = 0; i < kCount; i += 4099) ASSERT_EQ(host[i], 7.0f) << i;
  ASSERT_EQ(host[kCount - 1], 7.0f);
  cudaFree(data);
}

TEST(CUDAAllocatorTest, CachesOnTheDeviceAndReportsOutOfMemory) {
  SKIP_WITHOUT_GPU();
  CUDAContext context(GpuOption(0));
  context.SwitchToDevice(0);
  Allocator* allocator = GetAllocator(DeviceKind::kCUDA);
  CachingAllocator& books = GetCUDACachingAllocator();
  const CachingAllocatorStats before = books.GetStats(0);
  void* first = allocator->Allocate(1 << 20);
  ASSERT_NE(first, nullptr);
  allocator->Free(first);
  void* second = allocator->Allocate(1 << 20);
  const CachingAllocatorStats after = books.GetStats(0);
  if (books.caching_enabled()) {
    EXPECT_EQ(second, first);
    EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  }
  EXPECT_EQ(after.allocations, before.allocations + 2);
  allocator->Free(second);

  const std::string error = MessageOf([&] { allocator->Allocate(size_t{1} << 50); });
  EXPECT_NE(error.find("out of memory on device 0"), std::string::npos) << error;
}

// ---- Peer access ----

TEST(CudaPeerAccessTest, WithoutAGpuItIsANoOpThatDoesNotThrow) {
  if (HasCudaGpu()) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(EnableCudaPeerAccess(), 0);
  EXPECT_EQ(EnableCudaPeerAccess(), 0);  // the once-per-process answer again
  EXPECT_FALSE(CudaPeerAccessEnabled(0, 0));
  EXPECT_FALSE(CudaPeerAccessEnabled(0, 1));
  EXPECT_FALSE(CudaPeerAccessEnabled(-1, 0));
}

TEST(CudaPeerAccessTest, OneGpuHasNoPeersAndNothingChanges) {
  SKIP_WITHOUT_GPU();
  if (CudaDeviceCount() != 1) GTEST_SKIP() << "this case is for exactly one GPU";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(EnableCudaPeerAccess(), 0);
  EXPECT_TRUE(CudaPeerAccessEnabled(0, 0));
  EXPECT_FALSE(CudaPeerAccessEnabled(0, 1));
  EXPECT_FALSE(CudaPeerAccessEnabled(1, 0));
  EXPECT_EQ(CurrentCudaDevice(), 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // A context still comes up (it runs the same setup).
  EXPECT_NO_THROW(CUDAContext context(GpuOption(0)));
}

TEST(CudaPeerAccessTest, EveryPairTheDriverAllowsIsEnabled) {
  SKIP_WITHOUT_GPU();
  const int count = CudaDeviceCount();
  if (count < 2) GTEST_SKIP() << "needs 2 GPUs, this machine has " << count;
  const int last = count - 1;
  ASSERT_EQ(cudaSetDevice(last), cudaSuccess);
  // Creating a context runs the setup; the caller's device stays current.
  CUDAContext context(GpuOption(0));
  EXPECT_EQ(CurrentCudaDevice(), last);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  int expected_pairs = 0;
  for (int a = 0; a < count; ++a) {
    EXPECT_TRUE(CudaPeerAccessEnabled(a, a));
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      int can_access = 0;
      ASSERT_EQ(cudaDeviceCanAccessPeer(&can_access, a, b), cudaSuccess);
      EXPECT_EQ(CudaPeerAccessEnabled(a, b), can_access != 0) << a << " -> " << b;
      if (!can_access) continue;
      ++expected_pairs;
      // Independent evidence that it is really on: enabling again is refused
      // as already enabled.
      ASSERT_EQ(cudaSetDevice(a), cudaSuccess);
      EXPECT_EQ(cudaDeviceEnablePeerAccess(b, 0), cudaErrorPeerAccessAlreadyEnabled)
          << a << " -> " << b;
      (void)cudaGetLastError();
    }
  }
  EXPECT_EQ(EnableCudaPeerAccess(), expected_pairs);
  EXPECT_FALSE(CudaPeerAccessEnabled(0, count));

  // Data crosses devices either way (peer-to-peer where enabled).
  constexpr size_t kCount = 1 << 16;
  std::vector<float> host(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(i % 977);
  float* on_first = nullptr;
  float* on_second = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&on_first, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&on_second, kCount * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(on_first, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyPeer(on_second, 1, on_first, 0, kCount * sizeof(float)), cudaSuccess);
  std::vector<float> back(kCount, -1.0f);
  ASSERT_EQ(cudaMemcpy(back.data(), on_second, kCount * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(back, host);
  cudaFree(on_second);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaFree(on_first);
}

}  // namespace
}  // namespace doppio
