// doppio._C's blob traffic: feeding numpy arrays, strings, int8 and bfloat16
// tensors into the current workspace, fetching them back (GPU tensors
// through the host), and serializing single blobs.
#include "python_api/bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "core/cuda/cuda_common.h"
#include "core/cuda/cuda_context.h"
#include "core/serialization.h"
#include "core/tensor_int8.h"
#include "core/workspace.h"
#include "python_api/numpy_tensor.h"
#include "python_api/proto_bytes.h"

namespace py = pybind11;

namespace doppio {
namespace python {
namespace {

// Throws, naming the blob, unless `option` names a usable CUDA device.
void EnforceCudaDeviceFor(const DeviceOption& option, const std::string& verb,
                          const std::string& name) {
  DOPPIO_ENFORCE(HasCudaGpu(), "cannot ", verb, " blob '", name, "' on CUDA device ",
                 option.cuda_gpu_id(), ": ", CudaUnavailableReason());
  EnforceValidCudaDevice(option.cuda_gpu_id(), "blob '" + name + "'");
}

bool IsCudaOption(const DeviceOption& option) {
  return option.device_type() == static_cast<int>(DeviceKind::kCUDA);
}

// `host` copied into a new tensor on the option's GPU; returns once the copy
// is done, so `host` may go away.
Tensor CopyToCuda(const Tensor& host, const DeviceOption& option, const std::string& name) {
  DOPPIO_ENFORCE_ARG(host.dtype() != DataType::kString, "cannot feed blob '", name,
                 "' to a CUDA device: string tensors live on the CPU only");
  CUDAContext context(option);
  context.SwitchToDevice();
  Tensor device_tensor(Device{DeviceKind::kCUDA, option.cuda_gpu_id()});
  device_tensor.Resize(host.dims());
  void* destination = device_tensor.raw_mutable_data(host.dtype());
  context.CopyBytes(host.nbytes(), host.raw_data(), destination);
  context.FinishDeviceComputation();
  return device_tensor;
}

Tensor CopyToHost(const Tensor& device_tensor, const std::string& name) {
  DeviceOption option;
  option.set_device_type(static_cast<int>(DeviceKind::kCUDA));
  option.set_cuda_gpu_id(device_tensor.device().id);
  EnforceCudaDeviceFor(option, "fetch", name);
  CUDAContext context(option);
  context.SwitchToDevice();
  Tensor host(device_tensor.dims(), device_tensor.dtype());
  void* destination = host.raw_mutable_data(device_tensor.dtype());
  context.CopyBytes(device_tensor.nbytes(), device_tensor.raw_data(), destination);
  context.FinishDeviceComputation();
  return host;
}

// With a CUDA device option the array lands in a tensor on that GPU (as
// Caffe2's FeedBlob under a CUDA device scope); otherwise on the host.
void FeedBlob(const std::string& name, const py::array& array,
              const py::object& device_option_bytes) {
  DeviceOption option;
  if (!device_option_bytes.is_none()) {
    option = ParseProto<DeviceOption>(device_option_bytes.cast<py::bytes>(), "DeviceOption");
  }
  if (IsCudaOption(option)) EnforceCudaDeviceFor(option, "feed", name);
  Tensor tensor;
  ArrayToTensor(array, name, &tensor);
  if (IsCudaOption(option)) tensor = CopyToCuda(tensor, option, name);
  Registry().Current()->CreateBlob(name)->Reset(std::make_unique<Tensor>(std::move(tensor)));
}

// A Python str or bytes is a std::string blob, as in Caffe2 (not a string
// tensor: Caffe2 scripts fetch it back as bytes, and Save writes it as
// Caffe2's "std::string" BlobProto).
void FeedStringBlob(const std::string& name, const py::bytes& value) {
  Registry().Current()->CreateBlob(name)->Reset(
      std::make_unique<std::string>(static_cast<std::string>(value)));
}

// An Int8TensorCPU from a uint8 (activations, weights) or int32 (biases)
// array and its quantization: what Caffe2's Int8GivenTensorFill makes.
void FeedInt8Blob(const std::string& name, const py::array& array, float scale,
                  int32_t zero_point) {
  DOPPIO_ENFORCE_ARG(std::isfinite(scale) && scale > 0, "cannot feed Int8 blob '", name, "': scale ",
                 scale, " must be finite and positive");
  auto int8_tensor = std::make_unique<int8::Int8TensorCPU>();
  ArrayToTensor(array, name, &int8_tensor->t);
  const DataType dtype = int8_tensor->t.dtype();
  DOPPIO_ENFORCE_ARG(dtype == DataType::kUint8 || dtype == DataType::kInt32, "cannot feed Int8 blob '",
                 name, "': its data must be uint8 or int32, not ", DataTypeName(dtype));
  int8_tensor->scale = scale;
  int8_tensor->zero_point = zero_point;
  Registry().Current()->CreateBlob(name)->Reset(std::move(int8_tensor));
}

// A bfloat16 tensor (numpy has no bfloat16) from float32/float64 values,
// rounded to nearest even, or from uint16 arrays of bfloat16 bit patterns.
void FeedBFloat16Blob(const std::string& name, const py::array& array) {
  Tensor values;
  ArrayToTensor(array, name, &values);
  Tensor tensor(values.dims(), DataType::kBFloat16);
  bfloat16* out = tensor.mutable_data<bfloat16>();
  const int64_t n = values.numel();
  switch (values.dtype()) {
    case DataType::kUint16:
      for (int64_t i = 0; i < n; ++i) out[i].bits = values.data<uint16_t>()[i];
      break;
    case DataType::kFloat:
      for (int64_t i = 0; i < n; ++i) out[i] = FloatToBFloat16(values.data<float>()[i]);
      break;
    case DataType::kDouble:
      // As x.astype(float32) then a cast: two roundings, which can differ
      // from rounding the double once where float32's rounding lands on a
      // bfloat16 midpoint.
      for (int64_t i = 0; i < n; ++i) {
        out[i] = FloatToBFloat16(static_cast<float>(values.data<double>()[i]));
      }
      break;
    default:
      DOPPIO_THROW("cannot feed bfloat16 blob '", name, "' from ", DataTypeName(values.dtype()),
                   ": give float32/float64 values or uint16 bit patterns");
  }
  Registry().Current()->CreateBlob(name)->Reset(std::make_unique<Tensor>(std::move(tensor)));
}

// GPU tensors are copied to the host first; a std::string blob comes back
// as bytes; an Int8TensorCPU as (data, scale, zero_point), as Caffe2's
// fetch_blob returns it. A CUDA device option only asserts that the caller expects a GPU
// (a clear error where there is none).
py::object FetchBlob(const std::string& name, const py::object& device_option_bytes) {
  if (!device_option_bytes.is_none()) {
    const auto option =
        ParseProto<DeviceOption>(device_option_bytes.cast<py::bytes>(), "DeviceOption");
    if (IsCudaOption(option)) EnforceCudaDeviceFor(option, "fetch", name);
  }
  const Blob* blob = Registry().Current()->GetBlob(name);
  DOPPIO_ENFORCE_FOUND(blob != nullptr, "cannot fetch blob '", name,
                 "': it does not exist in the current workspace");
  if (blob->IsType<std::string>()) return py::bytes(blob->Get<std::string>());
  if (blob->IsType<int8::Int8TensorCPU>()) {
    const auto& int8_tensor = blob->Get<int8::Int8TensorCPU>();
    return py::make_tuple(TensorToArray(int8_tensor.t, name), int8_tensor.scale,
                          int8_tensor.zero_point);
  }
  // Other C++ objects (DB cursors, RecurrentNetwork's step workspaces)
  // fetch as a description, as Caffe2's did: scripts fetch every blob.
  if (!blob->IsTensor()) {
    return py::bytes(MakeString(name, ", a C++ native class of type ", blob->TypeName(), "."));
  }
  const Tensor& tensor = blob->GetTensor();
  if (tensor.device().kind == DeviceKind::kCUDA) {
    return TensorToArray(CopyToHost(tensor, name), name);
  }
  return TensorToArray(tensor, name);
}

// Blob `name`'s tensor as a numpy array over its memory (Caffe2's
// Blob.tensor().data): writes land in the blob.
py::array TensorViewOfBlob(const std::string& name) {
  const Blob* blob = Registry().Current()->GetBlob(name);
  DOPPIO_ENFORCE_FOUND(blob != nullptr, "cannot view blob '", name,
                 "': it does not exist in the current workspace");
  DOPPIO_ENFORCE_ARG(blob->IsTensor(), "blob '", name, "' holds ", blob->TypeName(), ", not a tensor");
  return SharedTensorView(blob->GetTensor(), name);
}

}  // namespace

void DefineBlobs(py::module_& m) {
  m.def("feed_blob", &FeedBlob, py::arg("name"), py::arg("array"),
        py::arg("device_option") = py::none());
  m.def("feed_string_blob", &FeedStringBlob, py::arg("name"), py::arg("value"));
  m.def("feed_int8_blob", &FeedInt8Blob, py::arg("name"), py::arg("array"), py::arg("scale"),
        py::arg("zero_point"));
  m.def("feed_bfloat16_blob", &FeedBFloat16Blob, py::arg("name"), py::arg("array"));
  m.def("fetch_blob", &FetchBlob, py::arg("name"), py::arg("device_option") = py::none());
  m.def("tensor_view", &TensorViewOfBlob, py::arg("name"));
  // A blob as one BlobProto's bytes (what Save writes for it), and back.
  m.def("serialize_blob", [](const std::string& name) {
    const Blob* blob = Registry().Current()->GetBlob(name);
    DOPPIO_ENFORCE_FOUND(blob != nullptr, "cannot serialize blob '", name,
                         "': it does not exist in the current workspace");
    return py::bytes(SerializeBlobToString(*blob, name));
  });
  m.def("deserialize_blob", [](const std::string& name, const py::bytes& serialized) {
    Blob loaded;
    DeserializeBlob(static_cast<std::string>(serialized), &loaded);
    Registry().Current()->CreateBlob(name)->Swap(loaded);
  });
}

}  // namespace python
}  // namespace doppio
