// What this build and machine can do, under the names Caffe2's Python
// probes (workspace.C.has_mkldnn, workspace.GetCudaPeerAccessPattern(),
// ...): Caffe2's tests and scripts branch on these before they build nets.
//
// The answers are facts of this extension: it is always compiled with CUDA
// and cuDNN (has_cuda_support); it has no MKL-DNN/IDEEP or HIP device;
// whether a GPU is usable (has_gpu_support, num_cuda_devices) is asked of
// the driver when the module loads, so every function here works, and says
// "none", on a machine without one.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "core/cuda/cuda_common.h"
#include "core/enforce.h"

namespace py = pybind11;

namespace doppio {
namespace python {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kIsAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kIsAsan = true;
#else
constexpr bool kIsAsan = false;
#endif
#else
constexpr bool kIsAsan = false;
#endif

void EnforceDeviceId(int device_id) {
  const int count = CudaDeviceCount();
  DOPPIO_ENFORCE(device_id >= 0 && device_id < count, "CUDA device ", device_id,
                 " does not exist: this process sees ", count, " CUDA device(s)",
                 count == 0 ? " (" + CudaUnavailableReason() + ")" : std::string());
}

// Caffe2's get_device_properties: the fields its scripts read.
py::dict DeviceProperties(int device_id) {
  EnforceDeviceId(device_id);
  cudaDeviceProp properties;
  DOPPIO_ENFORCE(cudaGetDeviceProperties(&properties, device_id) == cudaSuccess,
                 "cudaGetDeviceProperties failed for CUDA device ", device_id);
  py::dict result;
  result["name"] = std::string(properties.name);
  result["totalGlobalMem"] = properties.totalGlobalMem;
  result["maxThreadsPerBlock"] = properties.maxThreadsPerBlock;
  result["maxThreadsDim"] =
      std::vector<int>(properties.maxThreadsDim, properties.maxThreadsDim + 3);
  result["maxGridSize"] = std::vector<int>(properties.maxGridSize, properties.maxGridSize + 3);
  result["major"] = properties.major;
  result["minor"] = properties.minor;
  return result;
}

// pattern[i][j]: whether device i can read device j's memory directly.
std::vector<std::vector<bool>> PeerAccessPattern() {
  const int count = CudaDeviceCount();
  std::vector<std::vector<bool>> pattern(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      int can_access = i == j ? 1 : 0;
      if (i != j && cudaDeviceCanAccessPeer(&can_access, i, j) != cudaSuccess) can_access = 0;
      pattern[i][j] = can_access != 0;
    }
  }
  return pattern;
}

}  // namespace

void DefineCapabilities(py::module_& m) {
  m.attr("has_cuda_support") = true;
  // As in Caffe2: a CUDA build that sees a GPU (its tests add GPU cases
  // only then).
  m.attr("has_gpu_support") = CudaDeviceCount() > 0;
  m.attr("has_hip_support") = false;
  // Caffe2's MKL-DNN/IDEEP device; Caffe2's tests skip IDEEP cases on it.
  m.attr("has_mkldnn") = false;
  m.attr("use_mkldnn") = false;
  m.attr("use_ideep") = false;
  m.attr("is_asan") = kIsAsan;
  m.def("num_cuda_devices", [] { return CudaDeviceCount(); });
  m.def("cuda_unavailable_reason", [] { return CudaUnavailableReason(); });
  // The toolkit and cuDNN this extension was compiled against (Caffe2
  // reports the same compile-time numbers).
  m.def("get_cuda_version", [] { return CUDART_VERSION; });
  m.def("get_cudnn_version", [] { return CUDNN_VERSION; });
  m.def("get_cuda_peer_access_pattern", &PeerAccessPattern);
  m.def("get_device_properties", &DeviceProperties, py::arg("device_id"));
  m.def("is_numa_enabled", [] { return false; });
  m.def("get_num_numa_nodes", [] { return 0; });
}

}  // namespace python
}  // namespace doppio
