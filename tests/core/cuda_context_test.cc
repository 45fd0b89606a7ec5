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

// A macro: GTEST_SKIP returns from the test body that invokes it.
#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    if (!HasCudaGpu()) {                                               \
      GTEST_SKIP() << "no CUDA device: " << CudaUnavailableReason();   \
    }                                                                  \
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

}  // namespace
}  // namespace doppio
