// The harness of the C++ CPU-vs-CUDA op tests: host tensors to feed, one
// run of an op on either device from the same feeds, outputs fetched back
// as doubles wherever they live, and the comparison of the two runs.
//
// SKIP_WITHOUT_GPU() skips a test (with the reason) where no GPU is usable,
// and fails it instead under DOPPIO_REQUIRE_GPU=1 (tools/gpu_selftest.sh),
// so a GPU machine cannot pass these tests by skipping them.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "core/cuda/cuda_common.h"
#include "core/workspace.h"

namespace doppio {
namespace cpu_vs_cuda {

inline bool GpuRequired() {
  const char* value = std::getenv("DOPPIO_REQUIRE_GPU");
  if (value == nullptr) return false;
  const std::string v = value;
  return !(v.empty() || v == "0" || v == "false" || v == "off");
}

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    if (::doppio::CudaDeviceCount() == 0) {                                    \
      if (::doppio::cpu_vs_cuda::GpuRequired()) {                              \
        FAIL() << "DOPPIO_REQUIRE_GPU is set but "                             \
               << ::doppio::CudaUnavailableReason();                           \
      }                                                                        \
      GTEST_SKIP() << "no CUDA GPU: " << ::doppio::CudaUnavailableReason();    \
    }                                                                          \
  } while (false)

// A host tensor to feed; host_only keeps it on the host in the CUDA run too
// (a CPU learning rate).
struct Feed {
  std::string name;
  std::vector<int64_t> dims;
  DataType dtype;
  std::vector<char> bytes;
  bool host_only = false;
};

inline int64_t Count(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

template <typename T>
Feed Make(const std::string& name, const std::vector<int64_t>& dims, const std::vector<T>& values,
          bool host_only = false) {
  Feed feed{name, dims, DataTypeFor<T>(), {}, host_only};
  feed.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(feed.bytes.data(), values.data(), feed.bytes.size());
  EXPECT_EQ(Count(dims), static_cast<int64_t>(values.size())) << name;
  return feed;
}

// Deterministic, sign-varying values in about [-scale, scale].
template <typename T>
std::vector<T> Values(int64_t count, double scale, int salt) {
  std::vector<T> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = static_cast<T>(scale * std::sin(0.37 * static_cast<double>(i) + salt));
  }
  return values;
}

inline void Put(Workspace* ws, const Feed& feed, bool on_gpu) {
  Device device;
  if (on_gpu && !feed.host_only) device = Device{DeviceKind::kCUDA, 0};
  Tensor* tensor = ws->CreateBlob(feed.name)->GetMutableTensor(device);
  tensor->Resize(feed.dims);
  void* data = tensor->raw_mutable_data(feed.dtype);
  if (feed.bytes.empty()) return;
  if (device.kind == DeviceKind::kCUDA) {
    DOPPIO_CUDA_CHECK(
        cudaMemcpy(data, feed.bytes.data(), feed.bytes.size(), cudaMemcpyHostToDevice));
  } else {
    std::memcpy(data, feed.bytes.data(), feed.bytes.size());
  }
}

// An output as doubles, wherever it lives, with its dims and dtype.
struct Fetched {
  std::vector<int64_t> dims;
  DataType dtype = DataType::kUndefined;
  DeviceKind device = DeviceKind::kCPU;
  std::vector<double> values;
};

inline Fetched Get(const Workspace& ws, const std::string& name) {
  const Tensor& tensor = ws.GetBlob(name)->GetTensor();
  Fetched out{tensor.dims(), tensor.dtype(), tensor.device().kind, {}};
  std::vector<char> bytes(tensor.nbytes());
  if (!bytes.empty()) {
    if (tensor.device().kind == DeviceKind::kCUDA) {
      DOPPIO_CUDA_CHECK(cudaDeviceSynchronize());
      DOPPIO_CUDA_CHECK(
          cudaMemcpy(bytes.data(), tensor.raw_data(), bytes.size(), cudaMemcpyDeviceToHost));
    } else {
      std::memcpy(bytes.data(), tensor.raw_data(), bytes.size());
    }
  }
  DispatchDataType(tensor.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic<T>::value) {
      const T* values = reinterpret_cast<const T*>(bytes.data());
      for (int64_t i = 0; i < tensor.numel(); ++i) out.values.push_back(values[i]);
    }
  });
  return out;
}

// Runs `def` once in a fresh workspace, on GPU 0 when `on_gpu`; returns its
// outputs in order.
inline std::vector<Fetched> RunOn(const OperatorDef& def, const std::vector<Feed>& feeds,
                                  bool on_gpu) {
  Workspace ws;
  for (const Feed& feed : feeds) Put(&ws, feed, on_gpu);
  OperatorDef op = def;
  if (on_gpu) op.mutable_device_option()->set_device_type(CUDA);
  ws.RunOperatorOnce(op);
  std::vector<Fetched> outputs;
  for (const std::string& name : op.output()) outputs.push_back(Get(ws, name));
  return outputs;
}

// Relative to max(1, |expected|); reports the first differing value only,
// so one wrong large tensor does not bury the log.
inline void ExpectClose(const Fetched& expected, const Fetched& actual, double tolerance,
                        const std::string& what) {
  EXPECT_EQ(expected.dims, actual.dims) << what;
  EXPECT_EQ(expected.dtype, actual.dtype) << what;
  ASSERT_EQ(expected.values.size(), actual.values.size()) << what;
  for (size_t i = 0; i < expected.values.size(); ++i) {
    const double e = expected.values[i], a = actual.values[i];
    ASSERT_NEAR(a, e, tolerance * std::max(1.0, std::fabs(e))) << what << "[" << i << "]";
  }
}

// Runs `def` on both devices and compares every output; `host_outputs`
// lists the outputs the CUDA op keeps on the host. Returns the CUDA outputs.
inline std::vector<Fetched> ExpectCpuEqualsCuda(const OperatorDef& def,
                                                const std::vector<Feed>& feeds, double tolerance,
                                                const std::vector<int>& host_outputs = {}) {
  const std::vector<Fetched> cpu = RunOn(def, feeds, false);
  const std::vector<Fetched> gpu = RunOn(def, feeds, true);
  EXPECT_EQ(cpu.size(), gpu.size());
  for (size_t k = 0; k < cpu.size() && k < gpu.size(); ++k) {
    const std::string what = def.type() + " output " + def.output(static_cast<int>(k));
    const bool on_host =
        std::count(host_outputs.begin(), host_outputs.end(), static_cast<int>(k)) > 0;
    EXPECT_EQ(gpu[k].device, on_host ? DeviceKind::kCPU : DeviceKind::kCUDA) << what;
    ExpectClose(cpu[k], gpu[k], tolerance, what);
  }
  return gpu;
}

}  // namespace cpu_vs_cuda
}  // namespace doppio
